import Foundation
import MediaDecoding
import SensitivityAnalysis
import Testing
@testable import QuarantineCore

/// The configuration's one schema: the conffile, the documentation, `config show` and the errors
/// all come from it (issue 29).
@Suite("Configuration schema")
struct ConfigurationSchemaTests {
    static let root = SettingsTests.repositoryRoot

    @Test("etc/quarantine/config.toml is the schema's conffile (regenerate: quarantine config schema > etc/quarantine/config.toml)")
    func conffileIsGenerated() throws {
        let shipped = try String(contentsOf: Self.root.appendingPathComponent("etc/quarantine/config.toml"), encoding: .utf8)
        #expect(shipped == ConfigurationSchema.conffile())
    }

    @Test("docs/configuration.md is the schema's table (regenerate: quarantine config schema --markdown > docs/configuration.md)")
    func markdownIsGenerated() throws {
        let shipped = try String(contentsOf: Self.root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        #expect(shipped == ConfigurationSchema.markdown())
    }

    @Test("the conffile states every key: read over settings that differ everywhere, it gives the built-in defaults back")
    func conffileRoundTrips() throws {
        var other = Settings(mode: .child)
        other.watch = WatchSettings(incoming: ["/x"], outgoing: ["/y"], exclude: ["z"])
        other.agent = AgentSettings(notifications: false, settleMilliseconds: 1, rescanSeconds: 5, sandbox: false, fileDeadlineSeconds: 1,
                                    holdWhileChecking: true, browserHistory: false, browserProfiles: [], helpPage: nil, workerIdleSeconds: 0)
        other.analyzer = .init(workers: 7, intraOpThreads: 3, limits: MediaLimits(maxImageFileBytes: 1 << 20, maxDimension: 5, maxPixels: 1_000_000, decodeMemoryBytes: 16 << 20))
        other.analyzer.limits.containers = ContainerLimits(maxEntries: 1, maxExpandedBytes: 1 << 20, maxExpansionRatio: 2, maxDepth: 0, maxEntryBytes: 1 << 20, maxPages: 1, pdfAllPages: 0, maxSeconds: 1)
        other.video = VideoOptions(maxGap: 9, decoders: 1)
        for mode in AnalysisMode.allCases {
            other.policies[mode] = SensitivityPolicy(mode: mode, labelThresholds: [:], nsfwThreshold: nil, onError: mode == .adult ? .hold : .leave, rules: .off)
        }
        var parsed = try other.applying(toml: ConfigurationSchema.conffile(), from: "config.toml")
        // Keys the conffile shows only as examples (no value by default).
        parsed.watch.incoming = nil
        #expect(parsed == Settings())
        // And every setting written out reads back the same (config show's values are a file).
        var text = ""
        for (table, entries) in ConfigurationSchema.values(of: other) {
            if !table.isEmpty { text += "[\(table)]\n" }
            for entry in entries { text += "\(entry.key) = \(entry.value.toml)\n" }
        }
        #expect(try Settings().applying(toml: text, from: "show.toml") == other, "\(text)")
    }

    @Test("config show names every key of the schema, as text and as JSON (it had drifted: six agent keys were missing)")
    func showHasEveryKey() throws {
        let environment = ["HOME": "/home/sam"]
        let text = ConfigurationSchema.shownText(Settings(), file: "/c.toml", exists: false, environment: environment)
        let json = try JSONSerialization.jsonObject(with: Data(ConfigurationSchema.shownJSON(Settings(), file: "/c.toml", exists: false, environment: environment).utf8)) as? [String: Any]
        for section in ConfigurationSchema.sections {
            if !section.table.isEmpty { #expect(text.contains("\n[\(section.table)]\n"), "\(section.table)") }
            var node: Any? = json
            for part in section.table.split(separator: ".") { node = (node as? [String: Any])?[String(part)] }
            let keys = section.labelsOf.map { Array((SensitivityPolicy.defaults(for: $0).labelThresholds.keys)) } ?? section.keys.map(\.name)
            for key in keys where key != "help_page" {
                #expect(text.contains("\n\(key) = "), "config show has no \(section.table).\(key)")
                #expect((node as? [String: Any])?[key] != nil, "config show --json has no \(section.table).\(key)")
            }
        }
        for key in ["sandbox", "file_deadline_seconds", "hold_while_checking", "browser_history", "browser_profiles"] {
            #expect(text.contains("\n\(key) = "), "\(key)")
            #expect(ConfigurationSchema.conffile().contains("\(key) = "), "the conffile documents \(key)")
        }
        #expect(text.contains("incoming = [\"/home/sam/Downloads\"]  # default: your download folder"))
        #expect((json?["agent"] as? [String: Any])?["sandbox"] as? Bool == true)
        #expect((json?["policy"] as? [String: Any]).flatMap { $0["adult"] as? [String: Any] }?["nsfw_threshold"] as? Double == 0.85)
    }

    @Test("errors name the file's line and the key, and what the key takes")
    func errorsNameTheLine() throws {
        func error(_ text: String) -> Settings.ConfigurationError? {
            #expect(throws: Settings.ConfigurationError.self) { try Settings().applying(toml: text, from: "/c.toml") }
        }
        let range = error("mode = \"adult\"\n\n[agent]\n# the wait\nsettle_ms = -1\n")
        #expect(range?.line == 5)
        #expect(range?.description == "/c.toml:5: agent.settle_ms must be a whole number of milliseconds from 0 to 60000, not -1")
        #expect(error("[agent]\nsetle_ms = 100\n")?.description.hasPrefix("/c.toml:2: unknown key agent.setle_ms; known here: notifications, settle_ms") == true)
        #expect(error("[policy.teen]\nnsfw_threshold = 0.5\n")?.description.hasPrefix("/c.toml:1: unknown table policy.teen; known here: [policy.adult], [policy.child]") == true)
        #expect(error("[agent]\nsandbox = \"no\"\n")?.description == "/c.toml:2: agent.sandbox must be true or false, not \"no\"")
        #expect(error("[policy.adult.labels]\nFACE_MALE = 0.1\n")?.line == 2)
        #expect(error("[policy.adult.labels]\nNOT_A_LABEL = 0.5\n")?.message.contains("unknown NudeNet label") == true)
        #expect(error("agent = 1\n")?.description == "/c.toml:1: agent must be a table ([agent])")
        #expect(error("mode = \"adult\"\nmode = \"child\"\n")?.description == "/c.toml:2: not valid TOML: the key mode is defined twice")
        // Bounds that kept a multiplication from trapping (max_megapixels times a million).
        for key in ["max_megapixels", "max_image_file_mib", "decode_memory_mib", "max_dimension", "workers"] {
            #expect(error("[analysis]\n\(key) = 9223372036854775807\n")?.line == 2, "\(key)")
        }
        #expect(error("[containers]\nexpanded_mib = 9223372036854775807\n")?.line == 2)
    }

    @Test("every key of the schema has a comment in the conffile or in its adult twin, and a rule in words")
    func everyKeyDocumented() throws {
        let markdown = ConfigurationSchema.markdown()
        for section in ConfigurationSchema.sections {
            for key in section.keys {
                let twin = ConfigurationSchema.section(section.table.replacingOccurrences(of: "policy.child", with: "policy.adult"))?.key(key.name)
                #expect(!key.comment.isEmpty || !(twin?.comment.isEmpty ?? true), "\(section.table).\(key.name) has no comment")
                #expect(markdown.contains("| `\(key.name)` | \(key.rule.typeName) |"), "\(section.table).\(key.name)")
            }
        }
    }
}
