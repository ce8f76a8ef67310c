import Foundation
import Logging
import QuarantineStore
import SensitivityAnalysis
import Testing
@testable import AccountPipeline
@testable import QuarantineCore

/// The guardian service's configuration fails closed (issue 29): a wrong USER.toml never stops
/// the protection; the last good settings, or child-mode defaults, stay in force, and status says why.
@Suite("Configuration fails closed")
struct FailClosedConfigurationTests {
    @Test("guardian: a wrong file at start gives the last good copy's settings, then child-mode defaults, with the problem; a person's agent refuses it")
    func guardianStartsOnLastGood() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-failclosed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try AuditStore(path: folder.appendingPathComponent("audit.sqlite3").path)
        let config = folder.appendingPathComponent("sam.toml").path
        let lastGood = folder.appendingPathComponent("config.last-good.toml").path
        var options = AccountPipeline.Options(environment: ["HOME": folder.path], configPath: config)
        options.lastGoodConfigurationPath = lastGood
        let logger = Logger(label: "test")

        let good = "mode = \"child\"\n[watch]\nincoming = [\"/home/sam/Downloads\"]\n"
        try good.write(toFile: config, atomically: true, encoding: .utf8)
        let (first, none) = try AccountPipeline.initialSettings(options, store: store, logger: logger)
        #expect(none == nil)
        #expect(first.watch.incoming == ["/home/sam/Downloads"])
        #expect(try String(contentsOfFile: lastGood, encoding: .utf8) == good, "the good text is kept")
        #expect((try FileManager.default.attributesOfItem(atPath: lastGood)[.posixPermissions] as? Int) == 0o600)

        try "mode = \"adult\"\n[watch]\nincoming = [\"/elsewhere\"]\n[agent]\nsettle_ms = \"soon\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let (kept, problem) = try AccountPipeline.initialSettings(options, store: store, logger: logger)
        #expect(kept.mode == .child && kept.watch.incoming == ["/home/sam/Downloads"], "the last good settings, not the wrong file's")
        #expect(problem?.contains("sam.toml:5: agent.settle_ms") == true, "\(String(describing: problem))")
        #expect(problem?.contains("last good settings") == true)
        #expect(try String(contentsOfFile: lastGood, encoding: .utf8) == good, "a wrong file never replaces the good copy")

        try FileManager.default.removeItem(atPath: lastGood)
        let (defaults, why) = try AccountPipeline.initialSettings(options, store: store, logger: logger)
        #expect(defaults.mode == .child)
        #expect(defaults.watch == WatchSettings())
        #expect(why?.contains("built-in defaults in child mode") == true)

        // A file that went away: its defaults would be adult mode.
        try good.write(toFile: lastGood, atomically: true, encoding: .utf8)
        try FileManager.default.removeItem(atPath: config)
        let (gone, missing) = try AccountPipeline.initialSettings(options, store: store, logger: logger)
        #expect(gone.mode == .child && gone.watch.incoming == ["/home/sam/Downloads"])
        #expect(missing?.contains("sam.toml: is missing") == true, "\(String(describing: missing))")
        try FileManager.default.removeItem(atPath: lastGood)

        try "not toml at all [".write(toFile: config, atomically: true, encoding: .utf8)
        let (notTOML, said) = try AccountPipeline.initialSettings(options, store: store, logger: logger)
        #expect(notTOML.mode == .child)
        #expect(said?.contains("sam.toml:1: not valid TOML") == true, "\(String(describing: said))")
        options.lastGoodConfigurationPath = nil
        #expect(throws: Settings.ConfigurationError.self, "a person's agent: exit 78") {
            _ = try AccountPipeline.initialSettings(options, store: store, logger: logger)
        }
    }
}
