import SensitivityAnalysis

/// `[policy.MODE.rules]`: the decision rules of one mode (issue 28; README, "Decision rules").
extension DecisionRules {
    /// The keys of the table, as `config show` prints them.
    public var settingsTable: [String: Any] {
        ["lone_part": lonePartBelow.map { $0 as Any } ?? false, "person_evidence": personEvidence, "person_nsfw": personNSFW, "recheck": recheck,
         "skin": skinMinimum.map { $0 as Any } ?? false, "tiny_side": tinySide.map { $0 as Any } ?? false,
         "quiet_nsfw": quietNSFW.map { $0 as Any } ?? false, "upscaled_side": upscaledSide.map { $0 as Any } ?? false, "upscaled_skin": upscaledSkin]
    }

    mutating func apply(_ table: ConfigTable, at name: String, fail: (String) -> Settings.ConfigurationError) throws(Settings.ConfigurationError) {
        func fraction(_ key: String) throws(Settings.ConfigurationError) -> Double? {
            guard let value = table[key] else { return nil }
            guard let t = value.double ?? value.int.map(Double.init), (0...1).contains(t) else {
                throw fail("\(name).\(key) must be a number in 0...1")
            }
            return t
        }
        let known = ["lone_part", "person_evidence", "person_nsfw", "recheck", "skin", "tiny_side", "quiet_nsfw", "upscaled_side", "upscaled_skin"]
        for key in table.keys where !known.contains(key) {
            throw fail("\(name): unknown key \(key) (known: \(known.joined(separator: ", ")))")
        }
        if let value = table["lone_part"] {
            if value.bool == false { lonePartBelow = nil }
            else if let t = value.double ?? value.int.map(Double.init), (0...1).contains(t) { lonePartBelow = t }
            else { throw fail("\(name).lone_part must be a number in 0...1 (a lone part scoring below it must be confirmed), or false") }
        }
        if let value = table["skin"] {
            if value.bool == false { skinMinimum = nil }
            else if let t = value.double ?? value.int.map(Double.init), (0...1).contains(t) { skinMinimum = t }
            else { throw fail("\(name).skin must be a number in 0...1 (the skin-coloured share a lone part's box needs), or false") }
        }
        if let value = table["tiny_side"] {
            if value.bool == false { tinySide = nil }
            else if let n = value.int, (0...4096).contains(n) { tinySide = n == 0 ? nil : n }
            else { throw fail("\(name).tiny_side must be a whole number of pixels from 0 to 4096 (0 or false: off)") }
        }
        if let value = table["quiet_nsfw"] {
            if value.bool == false { quietNSFW = nil }
            else if let t = value.double ?? value.int.map(Double.init), (0...1).contains(t) { quietNSFW = t }
            else { throw fail("\(name).quiet_nsfw must be a number in 0...1 (a lone part in a picture open_nsfw scores below it is let through), or false") }
        }
        if let value = table["upscaled_side"] {
            if value.bool == false { upscaledSide = nil }
            else if let n = value.int, (0...4096).contains(n) { upscaledSide = n == 0 ? nil : n }
            else { throw fail("\(name).upscaled_side must be a whole number of pixels from 0 to 4096 (0 or false: off)") }
        }
        if let t = try fraction("upscaled_skin") { upscaledSkin = t }
        if let t = try fraction("person_evidence") { personEvidence = t }
        if let t = try fraction("person_nsfw") { personNSFW = t }
        if let value = table["recheck"] {
            guard let flag = value.bool else { throw fail("\(name).recheck must be true or false") }
            recheck = flag
        }
    }
}
