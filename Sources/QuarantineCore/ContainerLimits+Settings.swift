import MediaDecoding

extension ContainerLimits {
    /// The `[containers]` table: each bound a whole number in a sensible range.
    mutating func apply(_ table: ConfigTable, fail: (String) -> Settings.ConfigurationError) throws(Settings.ConfigurationError) {
        func number(_ key: String, _ range: ClosedRange<Int>, _ unit: String) throws(Settings.ConfigurationError) -> Int? {
            guard let value = table[key] else { return nil }
            guard let n = value.int, range.contains(n) else {
                throw fail("containers.\(key) must be a whole number of \(unit) from \(range.lowerBound) to \(range.upperBound)")
            }
            return n
        }
        for key in table.keys where !Self.settingKeys.contains(key) {
            throw fail("[containers]: unknown key \(key); known: \(Self.settingKeys.joined(separator: ", "))")
        }
        if let n = try number("entries", 1...1_000_000, "entries") { maxEntries = n }
        if let n = try number("expanded_mib", 1...1_048_576, "MiB") { maxExpandedBytes = Int64(n) << 20 }
        if let n = try number("ratio", 2...100_000, "times") { maxExpansionRatio = n }
        if let n = try number("depth", 0...16, "levels") { maxDepth = n }
        if let n = try number("entry_mib", 1...65_536, "MiB") { maxEntryBytes = Int64(n) << 20 }
        if let n = try number("pages", 1...100_000, "pages") { maxPages = n }
        if let n = try number("all_pages", 0...100_000, "pages") { pdfAllPages = n }
        if let n = try number("seconds", 1...86_400, "seconds") { maxSeconds = n }
    }

    /// The keys of `[containers]`, as `config show` prints them.
    static let settingKeys = ["entries", "expanded_mib", "ratio", "depth", "entry_mib", "pages", "all_pages", "seconds"]

    /// The values in force, by key (for `config show`).
    public var settingValues: [(key: String, value: Int)] {
        [("entries", maxEntries), ("expanded_mib", Int(maxExpandedBytes >> 20)), ("ratio", maxExpansionRatio), ("depth", maxDepth),
         ("entry_mib", Int(maxEntryBytes >> 20)), ("pages", maxPages), ("all_pages", pdfAllPages), ("seconds", maxSeconds)]
    }
}
