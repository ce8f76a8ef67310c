import Foundation
import MediaDecoding
import QuarantineStore
import SensitivityAnalysis
import Testing
@testable import QuarantineCore

/// The core's decisions, in process: no binary, no models.
@Suite("Core rules")
struct CoreRulesTests {
    /// A fresh folder with an audit database, removed by the caller.
    static func store() throws -> (AuditStore, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-core-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return (try AuditStore(path: folder.appendingPathComponent("audit.sqlite3").path), folder)
    }

    // MARK: - The mode in force

    @Test("a configuration that cannot be used never lowers protection")
    func brokenConfigurationIsChild() {
        let broken = ModeInForce.resolve(configuration: .failure(.init(path: "/x/config.toml", message: "not valid TOML")), recorded: nil, runningAgent: nil)
        #expect(broken.mode == .child)
        #expect(broken.note?.contains("not valid TOML") == true)
        #expect(ModeInForce.resolve(configuration: .success(.adult), recorded: nil, runningAgent: nil) == ModeInForce(mode: .adult))
        #expect(ModeInForce.resolve(configuration: .success(.adult), recorded: .child, runningAgent: nil).mode == .child)
        #expect(ModeInForce.resolve(configuration: .success(.adult), recorded: .adult, runningAgent: .child).mode == .child)
        #expect(ModeInForce.resolve(configuration: .success(.adult), recorded: .adult, runningAgent: .adult).mode == .adult)
    }

    @Test("the mode read from files: a syntax error, an unreadable file, a missing file, a mode a guardian set")
    func modeFromFiles() throws {
        let (store, folder) = try Self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let config = folder.appendingPathComponent("config.toml")
        let environment = ["HOME": folder.path, "XDG_RUNTIME_DIR": folder.path]
        // No file: the defaults (adult), unless a guardian set child mode.
        #expect(ModeInForce.current(configurationPath: config.path, store: store, environment: environment).mode == .adult)
        try store.recordMode(.child, from: .adult, actor: "cli")
        #expect(ModeInForce.current(configurationPath: config.path, store: store, environment: environment).mode == .child)
        try store.recordMode(.adult, from: .child, actor: "guardian")
        #expect(ModeInForce.current(configurationPath: config.path, store: store, environment: environment).mode == .adult)
        // A syntax error.
        try "mode = \"adult\"\n[watch\n".write(to: config, atomically: true, encoding: .utf8)
        #expect(ModeInForce.current(configurationPath: config.path, store: store, environment: environment).mode == .child)
        // A file that is a folder (cannot be read).
        try FileManager.default.removeItem(at: config)
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        #expect(ModeInForce.current(configurationPath: config.path, store: store, environment: environment).mode == .child)
        // A file in the way of the path (ENOTDIR is not "missing").
        let plain = folder.appendingPathComponent("plain")
        #expect(FileManager.default.createFile(atPath: plain.path, contents: Data()))
        #expect(ModeInForce.current(configurationPath: plain.path + "/config.toml", store: store, environment: environment).mode == .child)
    }

    // MARK: - Guardian rules

    @Test("child mode: every action that weakens protection needs the guardian PIN; adult mode asks once")
    func guardianRules() {
        let weakening: [ProtectedAction] = [.release, .block, .purge, .removeWatchedFolder, .changeExclusions, .changeThresholds, .leaveChildMode, .show]
        for action in weakening {
            let approval = GuardianRules.approval(for: action, in: .child, pinIsSet: true)
            #expect(approval == .guardianPIN(askTwice: action == .release || action == .block || action == .show), "\(action)")
            guard case .refused = GuardianRules.approval(for: action, in: .child, pinIsSet: false) else {
                Issue.record("\(action) in child mode without a PIN must be refused")
                continue
            }
        }
        #expect(GuardianRules.approval(for: .release, in: .adult, pinIsSet: false) == .confirmation)
        #expect(GuardianRules.approval(for: .purge, in: .adult, pinIsSet: true) == .confirmation)
        #expect(GuardianRules.approval(for: .removeWatchedFolder, in: .adult, pinIsSet: false) == Approval.none)
        // The review page's Show: one click in adult mode (Apple's simple intervention).
        #expect(GuardianRules.approval(for: .show, in: .adult, pinIsSet: true) == Approval.none)
        #expect(GuardianRules.approval(for: .enterChildMode, in: .adult, pinIsSet: true) == Approval.none)
        if case .refused = GuardianRules.approval(for: .enterChildMode, in: .adult, pinIsSet: false) {} else {
            Issue.record("entering child mode needs a PIN set first")
        }
    }

    // MARK: - Configuration file

    @Test("one editor: top-level and table keys set in place, multi-line arrays replaced whole, comments kept")
    func editor() {
        let text = "# mine\nmode = \"adult\"\n\n[watch]\nincoming = [\n  \"~/a\",\n  \"~/b\",\n]\nexclude = [\"x\"] # keep\n"
        let child = ConfigurationFile.setting("mode", to: ConfigurationFile.tomlString("child"), of: text)
        #expect(child == text.replacingOccurrences(of: "mode = \"adult\"", with: "mode = \"child\""))
        let incoming = ConfigurationFile.setting("incoming", to: ConfigurationFile.tomlArray(["/c"]), inTable: "watch", of: text)
        #expect(incoming == "# mine\nmode = \"adult\"\n\n[watch]\nincoming = [\"/c\"]\nexclude = [\"x\"] # keep\n")
        #expect(ConfigurationFile.setting("mode", to: "\"child\"", of: "[watch]\nmode = 1\n") == "mode = \"child\"\n[watch]\nmode = 1\n")
        #expect(ConfigurationFile.setting("notifications", to: "false", inTable: "agent", of: "") == "[agent]\nnotifications = false\n")
        #expect(ConfigurationFile.tomlArray(["a\"b", "c\\d"]) == "[\"a\\\"b\", \"c\\\\d\"]")
    }

    @Test("one loader: missing means defaults; unreadable, not UTF-8 or not TOML is an error naming the file")
    func loader() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("config.toml").path
        let missing = try ConfigurationFile.load(path)
        #expect(!missing.exists && missing.settings == Settings())
        #expect(FileManager.default.createFile(atPath: path, contents: Data([0x6d, 0xff, 0xfe])))
        #expect(throws: Settings.ConfigurationError.self) { _ = try ConfigurationFile.load(path) }
        try "mode = \"teen\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        let error = #expect(throws: Settings.ConfigurationError.self) { _ = try ConfigurationFile.load(path) }
        #expect(error?.description.hasPrefix(path) == true)
        let file = try ConfigurationFile.load(folder.appendingPathComponent("new.toml").path)
        #expect(throws: Settings.ConfigurationError.self) { try file.save("mode = [") }
        #expect(!FileManager.default.fileExists(atPath: file.path), "a broken text is never written")
    }

    @Test("the system-wide file (/etc/quarantine/config.toml) is read under the user's, never under a file named explicitly")
    func systemWideFile() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("quarantine"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let system = folder.appendingPathComponent("system.toml").path
        let environment = ["XDG_CONFIG_HOME": folder.path, "HOME": folder.path]
        let user = folder.appendingPathComponent("quarantine/config.toml").path
        #expect(try ConfigurationFile.load(environment: environment, systemPath: system).settings == Settings(), "neither file: the defaults")
        try "mode = \"child\"\n[agent]\nsettle_ms = 250\n".write(toFile: system, atomically: true, encoding: .utf8)
        let systemOnly = try ConfigurationFile.load(environment: environment, systemPath: system)
        #expect(systemOnly.settings.mode == .child && systemOnly.settings.agent.settleMilliseconds == 250 && !systemOnly.exists)
        #expect(systemOnly.path == user, "edits still go to the user's file")
        try "[agent]\nsettle_ms = 300\n".write(toFile: user, atomically: true, encoding: .utf8)
        let both = try ConfigurationFile.load(environment: environment, systemPath: system)
        #expect(both.settings.mode == .child && both.settings.agent.settleMilliseconds == 300, "the user's keys over the system's, the rest kept")
        #expect(try ConfigurationFile.load(user, environment: environment, systemPath: system).settings.mode == .adult, "--config FILE stands alone")
        try "mode = [\n".write(toFile: system, atomically: true, encoding: .utf8)
        let error = #expect(throws: Settings.ConfigurationError.self) { _ = try ConfigurationFile.load(environment: environment, systemPath: system) }
        #expect(error?.description.hasPrefix(system) == true, "a broken system file is named, never skipped")
    }

    // MARK: - Lists

    @Test("lists first: allowed, blocked bytes, blocked site, a clean verdict reused only when asked")
    func listCheck() throws {
        let (store, folder) = try Self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let a = String(repeating: "a", count: 64), b = String(repeating: "b", count: 64), c = String(repeating: "c", count: 64)
        try store.allow(sha256: a)
        try store.blockHash(b, reason: "blocked by cli")
        try store.blockOrigin("bad.example")
        try store.markSeen(SeenFile(path: "/d/c.jpg", identity: .init(device: 1, inode: 1, size: 1, modificationNanoseconds: 1), sha256: c, mode: .adult, verdict: .clean))
        #expect(try ListCheck.check(sha256: a, originHost: "bad.example", mode: .adult, store: store) == .allowed)
        #expect(try ListCheck.check(sha256: b, originHost: nil, mode: .adult, store: store) == .blocked(reason: "on the block list: blocked by cli"))
        #expect(try ListCheck.check(sha256: c, originHost: "bad.example", mode: .adult, store: store) == .blocked(reason: "downloaded from bad.example, which is blocked", site: "bad.example"))
        #expect(try ListCheck.check(sha256: c, originHost: nil, mode: .adult, store: store) == .knownClean)
        #expect(try ListCheck.check(sha256: c, originHost: nil, mode: .child, store: store) == .analyse, "an adult verdict is not a child's")
        #expect(try ListCheck.check(sha256: c, originHost: nil, mode: .adult, store: store, reuseVerdicts: false) == .analyse)
    }

    @Test("modes: an adult's verdict or release never stands in child mode; a child's stands in both")
    func modesOfSeenAndAllowed() throws {
        let (store, folder) = try Self.store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let identity = FileIdentity(device: 7, inode: 8, size: 9, modificationNanoseconds: 10)
        try store.markSeen(SeenFile(path: "/d/a.jpg", identity: identity, sha256: nil, mode: .adult, verdict: .clean))
        #expect(try store.hasSeen(identity, at: "/d/a.jpg", in: .adult))
        #expect(try !store.hasSeen(identity, at: "/d/a.jpg", in: .child))
        let other = FileIdentity(device: 7, inode: 9, size: 9, modificationNanoseconds: 10)
        try store.markSeen(SeenFile(path: "/d/b.jpg", identity: other, sha256: nil, mode: .child, verdict: .clean))
        #expect(try store.hasSeen(other, at: "/d/b.jpg", in: .adult) && store.hasSeen(other, at: "/d/b.jpg", in: .child))

        let adultRelease = String(repeating: "d", count: 64), childRelease = String(repeating: "e", count: 64)
        try store.allow(sha256: adultRelease, mode: .adult)
        try store.allow(sha256: childRelease, mode: .child)
        #expect(try ListCheck.check(sha256: adultRelease, originHost: nil, mode: .adult, store: store) == .allowed)
        #expect(try ListCheck.check(sha256: adultRelease, originHost: nil, mode: .child, store: store) == .analyse)
        #expect(try ListCheck.check(sha256: childRelease, originHost: nil, mode: .adult, store: store) == .allowed)
        #expect(try ListCheck.check(sha256: childRelease, originHost: nil, mode: .child, store: store) == .allowed)
        // A guardian's later release of the same bytes widens it; an adult's never narrows a child's.
        try store.allow(sha256: adultRelease, mode: .child)
        try store.allow(sha256: childRelease, mode: .adult)
        #expect(try ListCheck.check(sha256: adultRelease, originHost: nil, mode: .child, store: store) == .allowed)
        #expect(try ListCheck.check(sha256: childRelease, originHost: nil, mode: .child, store: store) == .allowed)
    }
}
