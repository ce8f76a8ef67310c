import SensitivityAnalysis

/// `[policy.MODE]`, `[policy.MODE.labels]` and `[policy.MODE.rules]` of each mode.
extension ConfigurationSchema {
    static func policySections(_ mode: AnalysisMode) -> [ConfigurationSection] {
        @Sendable func update(_ s: inout Settings, _ change: (inout SensitivityPolicy) -> Void) {
            change(&s.policies[mode, default: .defaults(for: mode)])
        }
        @Sendable func policy(_ s: Settings) -> SensitivityPolicy { s.policies[mode] ?? .defaults(for: mode) }
        let table = "policy.\(mode.rawValue)"
        let adult = mode == .adult
        let head = ConfigurationSection(table, comment: adult ? [
            "---------------------------------------------------------------------------------------------",
            "Policies. A picture is sensitive when any listed NudeNet label scores at least its threshold,",
            "or when open_nsfw's whole-picture probability reaches nsfw_threshold. Set a label or",
            "nsfw_threshold to false to ignore it. NudeNet reports nothing under 0.2.",
            "",
            "Why these labels: they are the ones that mean nudity. FACE_*, FEET_*, ARMPITS_*, BELLY_*,",
            "MALE_BREAST_EXPOSED and the *_COVERED labels describe ordinary photos of people (beach,",
            "sport, family) and would hide them for no reason.",
            "Why these numbers: NudeNet's scores for a real exposed region are usually above 0.5, while",
            "on our benign reference photos (faces, people, skin-toned scenes; Tests/Fixtures/golden.json)",
            "no counted label scores above 0.3 and open_nsfw stays far below 0.5.",
            "---------------------------------------------------------------------------------------------",
        ] : [], keys: [
            ConfigurationKey("nsfw_threshold", .number(0...1, orOff: true), comment: adult
                ? ["Adults see only what is clearly explicit: few false alarms."]
                : ["Children: lower thresholds and two covered-but-intimate labels. A false alarm costs a",
                   "guardian a minute; a miss costs more."],
                apply: { v, s in update(&s) { $0.nsfwThreshold = v.double } },
                value: { s in policy(s).nsfwThreshold.map(ConfigurationValue.number) ?? .off }),
            ConfigurationKey("on_error", .choice(ErrorAction.allCases.map(\.rawValue)), comment: adult
                ? ["Media that cannot be checked (corrupt, too large, unsupported): \"leave\" it where it is and",
                   "say so, or \"hold\" it in the vault as unverified until it is released."]
                : ["What cannot be checked is held in the vault as unverified: a guardian releases it."],
                apply: { v, s in update(&s) { $0.onError = v.string.flatMap(ErrorAction.init(rawValue:)) ?? $0.onError } },
                value: { s in .string(policy(s).onError.rawValue) }),
        ])
        let labels = ConfigurationSection("\(table).labels", comment: [], labelsOf: mode)
        func fraction(_ name: String, _ comment: [String], _ keyPath: WritableKeyPath<DecisionRules, Double> & Sendable) -> ConfigurationKey {
            ConfigurationKey(name, .number(0...1), comment: comment,
                             apply: { v, s in update(&s) { $0.rules[keyPath: keyPath] = v.double ?? 0 } },
                             value: { s in .number(policy(s).rules[keyPath: keyPath]) })
        }
        func optionalFraction(_ name: String, _ comment: [String], _ keyPath: WritableKeyPath<DecisionRules, Double?> & Sendable) -> ConfigurationKey {
            ConfigurationKey(name, .number(0...1, orOff: true), comment: comment,
                             apply: { v, s in update(&s) { $0.rules[keyPath: keyPath] = v.double } },
                             value: { s in policy(s).rules[keyPath: keyPath].map(ConfigurationValue.number) ?? .off })
        }
        let rules = ConfigurationSection("\(table).rules", comment: adult ? [
            "Decision rules over the models' raw output (docs/analysis.md, \"Decision rules\"; issue 28).",
            "NudeNet scores fruit, planets, balls and emoji faces as BUTTOCKS_EXPOSED up to 0.85 when nothing",
            "else in the picture shows a person. A body part needs a body: a counted part (the labels above)",
            "scoring below lone_part, with no face, feet, belly, covered part (person_evidence or more) or",
            "part of lone_part or more elsewhere in the picture, and open_nsfw below person_nsfw, is a lone",
            "part. In a picture under tiny_side pixels on its long side (a stamp, an icon, a sprite) a lone",
            "part is let through. A lone part whose box has less than `skin` skin-coloured pixels, in a",
            "picture in colour, is let through (greyscale and strongly tinted pictures are exempt). A lone",
            "part the skin rule cannot judge (greyscale, strongly tinted, or skin = false) in a picture",
            "open_nsfw scores below quiet_nsfw is let through (the two models disagree; open_nsfw reads no",
            "colour). Any other lone part is judged again on a mirrored copy and on a copy set in a grey",
            "margin (recheck) and stands only if it scores its threshold again on both. In a picture under",
            "upscaled_side pixels on its short side (open_nsfw sees it stretched more than 2x), in colour,",
            "with under upscaled_skin of its pixels skin-coloured, no face, feet, belly or covered part",
            "(person_evidence or more), where every counted part scores under 0.8 and has under `skin` of",
            "its box skin-coloured, open_nsfw's score is set aside: it neither flags the picture nor is",
            "human evidence (a small picture open_nsfw flags with no part at all stays flagged). A part of",
            "lone_part or more, a part of 0.8 or more beside any human evidence, any part beside a person,",
            "and the test card always stand. scan --json lists what each rule decided; a detection let",
            "through is named, with its raw scores, in 'quarantine history' (a guardian: 'quarantine",
            "history --user CHILD').",
        ] : [], keys: [
            optionalFraction("lone_part", adult ? ["A counted part scoring below this, with no person around it, is a lone part (false: no rule",
                                                    "at all; the thresholds alone decide)."] : [], \.lonePartBelow),
            fraction("person_evidence", adult ? ["Another detection scoring at least this is a person around the part."] : [], \.personEvidence),
            fraction("person_nsfw", adult ? ["open_nsfw at least this is a person around the part too."] : [], \.personNSFW),
            ConfigurationKey("recheck", .flag, comment: adult ? ["A lone part is judged again on a mirrored and a re-framed copy (false: a lone part the skin",
                                                                                 "rule keeps needs lone_part)."] : [],
                             apply: { v, s in update(&s) { $0.rules.recheck = v.bool ?? true } },
                             value: { s in .bool(policy(s).rules.recheck) }),
            optionalFraction("skin", adult ? ["The skin-coloured share a lone part's box needs, in a picture in colour (false: no skin",
                                                  "rule)."] : [], \.skinMinimum),
            ConfigurationKey("tiny_side", .whole(0...4096, unit: "pixels", orOff: true),
                             comment: adult ? ["A lone part in a picture whose long side is under this is let through (0 or false: no",
                                                  "size rule)."] : [],
                             apply: { v, s in update(&s) { $0.rules.tinySide = v.int.flatMap { $0 == 0 ? nil : $0 } } },
                             value: { s in policy(s).rules.tinySide.map(ConfigurationValue.int) ?? .off }),
            optionalFraction("quiet_nsfw", adult ? ["A lone part the skin rule cannot judge is let through when open_nsfw scores the picture",
                                                     "below this (false: no such rule)."] : [], \.quietNSFW),
            ConfigurationKey("upscaled_side", .whole(0...4096, unit: "pixels", orOff: true),
                             comment: adult ? ["open_nsfw's score on a small colour picture (short side under this) is set aside as above",
                                                  "(0 or false: never)."] : ["Child mode: false, a child's small pictures keep open_nsfw's verdict."],
                             apply: { v, s in update(&s) { $0.rules.upscaledSide = v.int.flatMap { $0 == 0 ? nil : $0 } } },
                             value: { s in policy(s).rules.upscaledSide.map(ConfigurationValue.int) ?? .off }),
            fraction("upscaled_skin", adult ? ["The skin-coloured share of the whole picture under which upscaled_side applies."] : [], \.upscaledSkin),
        ])
        return [head, labels, rules]
    }
}
