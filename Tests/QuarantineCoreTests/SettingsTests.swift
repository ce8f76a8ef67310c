import Foundation
import MediaDecoding
import SensitivityAnalysis
import Testing
@testable import QuarantineCore

/// The configuration's keys and defaults.
@Suite("Settings")
struct SettingsTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("configuration: user values override defaults key by key; bad values are named")
    func configuration() throws {
        let settings = try Settings().applying(toml: """
            mode = "child"
            [analysis]
            workers = 3
            [policy.child]
            nsfw_threshold = 0.7
            [policy.child.labels]
            BUTTOCKS_EXPOSED = 0.5
            ANUS_COVERED = false
            """, from: "test.toml")
        #expect(settings.mode == .child)
        #expect(settings.analyzer.workers == 3)
        #expect(settings.policy.nsfwThreshold == 0.7)
        #expect(settings.policy.labelThresholds["BUTTOCKS_EXPOSED"] == 0.5)
        #expect(settings.policy.labelThresholds["ANUS_COVERED"] == nil)
        #expect(settings.policy.labelThresholds["FEMALE_GENITALIA_EXPOSED"] == 0.3)
        #expect(settings.policies[.adult] == .defaults(for: .adult))
        for bad in ["mode = \"teen\"", "[policy.adult.labels]\nNOT_A_LABEL = 0.5", "[policy.adult.labels]\nFACE_MALE = 0.1", "[analysis]\nworkers = -1", "mode = "] {
            #expect(throws: Settings.ConfigurationError.self) { _ = try Settings().applying(toml: bad, from: "bad.toml") }
        }
    }

    @Test("agent.worker_idle_seconds: 60 by default, 0 keeps the worker, 1 to 86400 seconds; anything else is named")
    func workerIdleSeconds() throws {
        #expect(Settings().agent.workerIdleSeconds == 60)
        #expect(try Settings().applying(toml: "[agent]\nworker_idle_seconds = 0", from: "t.toml").agent.workerIdleSeconds == 0)
        #expect(try Settings().applying(toml: "[agent]\nworker_idle_seconds = 2", from: "t.toml").agent.workerIdleSeconds == 2)
        for bad in ["-1", "86401", "\"60\"", "1.5", "true"] {
            #expect {
                _ = try Settings().applying(toml: "[agent]\nworker_idle_seconds = \(bad)", from: "bad.toml")
            } throws: { "\($0)".contains("agent.worker_idle_seconds") }
        }
    }

    @Test("policy.MODE.rules: each decision rule has a setting; bad values and unknown keys are named")
    func decisionRules() throws {
        #expect(Settings().policies[.child]?.rules == .defaults(for: .child))
        let settings = try Settings().applying(toml: """
            [policy.child.rules]
            lone_part = 0.95
            person_evidence = 0.6
            person_nsfw = 0.2
            skin = false
            tiny_side = 64
            quiet_nsfw = 0.05
            upscaled_side = 96
            upscaled_skin = 0.1
            [policy.adult.rules]
            lone_part = false
            recheck = false
            quiet_nsfw = false
            upscaled_side = 0
            """, from: "t.toml")
        #expect(settings.policies[.child]?.rules == DecisionRules(lonePartBelow: 0.95, personEvidence: 0.6, personNSFW: 0.2, recheck: true, skinMinimum: nil, tinySide: 64,
                                                                  quietNSFW: 0.05, upscaledSide: 96, upscaledSkin: 0.1))
        #expect(settings.policies[.adult]?.rules == DecisionRules(lonePartBelow: nil, recheck: false, quietNSFW: nil, upscaledSide: nil))
        for bad in ["lone_part = 2", "lone_part = true", "person_evidence = \"high\"", "recheck = 1", "skin = true", "colour = 1", "tiny_side = 1.5", "tiny_side = -1",
                    "quiet_nsfw = true", "quiet_nsfw = 1.5", "upscaled_side = 0.5", "upscaled_side = true", "upscaled_skin = false", "upscaled_skin = 2"] {
            #expect {
                _ = try Settings().applying(toml: "[policy.adult.rules]\n\(bad)", from: "bad.toml")
            } throws: { "\($0)".contains("policy.adult.rules") }
        }
    }

    @Test("etc/quarantine/config.toml states exactly the built-in defaults")
    func shippedDefaultsMatch() throws {
        let path = SettingsTests.repositoryRoot.appendingPathComponent("etc/quarantine/config.toml").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var empty = Settings()
        for mode in AnalysisMode.allCases {
            empty.policies[mode] = SensitivityPolicy(mode: mode, labelThresholds: [:], nsfwThreshold: nil, onError: mode == .adult ? .hold : .leave,
                                                     rules: DecisionRules(lonePartBelow: 0.1, personEvidence: 0.9, personNSFW: 0.9, recheck: false, skinMinimum: 0.9, tinySide: 7,
                                                                          quietNSFW: 0.9, upscaledSide: 9, upscaledSkin: 0.9))
        }
        empty.mode = .child
        empty.watch = WatchSettings(incoming: nil, outgoing: ["/elsewhere"], exclude: [])
        empty.agent = AgentSettings(notifications: false, settleMilliseconds: 1, rescanSeconds: 5, workerIdleSeconds: 7)
        let parsed = try empty.applying(toml: text, from: path)
        #expect(parsed.mode == .adult)
        for mode in AnalysisMode.allCases { #expect(parsed.policies[mode] == .defaults(for: mode), "\(mode)") }
        #expect(parsed.analyzer.limits == MediaLimits.default)
        #expect(parsed.analyzer.intraOpThreads == SensitivityAnalyzer.Configuration().intraOpThreads)
        #expect(parsed.watch == WatchSettings())
        #expect(parsed.agent == AgentSettings())
    }

}

/// The download folder, read as xdg-user-dir reads it.
@Suite("Download folder")
struct DownloadFolderTests {
    @Test("user-dirs.dirs: $HOME paths, absolute paths, comments, the last assignment; unset or home means ~/Downloads")
    func parsesUserDirs() throws {
        let text = """
        # This file is written by xdg-user-dirs-update
        XDG_DESKTOP_DIR="$HOME/Desktop"
        XDG_DOWNLOAD_DIR="$HOME/Downloads"
        XDG_DOWNLOAD_DIR="$HOME/T\\"el\\"echargements"
        """
        #expect(WatchSettings.userDirectory("DOWNLOAD", in: text, home: "/home/a") == "/home/a/T\"el\"echargements")
        #expect(WatchSettings.userDirectory("DOWNLOAD", in: "XDG_DOWNLOAD_DIR=\"/srv/in\"\n", home: "/home/a") == "/srv/in")
        #expect(WatchSettings.userDirectory("DOWNLOAD", in: "#XDG_DOWNLOAD_DIR=\"/x\"\nXDG_MUSIC_DIR=\"/m\"\n", home: "/h") == nil)
        #expect(WatchSettings.userDirectory("DOWNLOAD", in: "XDG_DOWNLOAD_DIR=relative\n", home: "/h") == nil)

        let home = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-xdg-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let config = home.appendingPathComponent(".config")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        let environment = ["HOME": home.path]
        #expect(WatchSettings.downloadFolder(environment: environment) == home.path + "/Downloads", "no file")
        try "XDG_DOWNLOAD_DIR=\"$HOME/\"\n".write(to: config.appendingPathComponent("user-dirs.dirs"), atomically: true, encoding: .utf8)
        #expect(WatchSettings.downloadFolder(environment: environment) == home.path + "/Downloads", "the home folder itself")
        try "XDG_DOWNLOAD_DIR=\"$HOME/Incoming\"\n".write(to: config.appendingPathComponent("user-dirs.dirs"), atomically: true, encoding: .utf8)
        #expect(WatchSettings.downloadFolder(environment: environment) == home.path + "/Incoming")
        // The same answer as xdg-user-dir itself, where it is installed.
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/xdg-user-dir") {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/xdg-user-dir")
            process.arguments = ["DOWNLOAD"]
            process.environment = ["HOME": home.path, "PATH": "/usr/bin:/bin"]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let answer = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            process.waitUntilExit()
            #expect(answer == home.path + "/Incoming")
        }
    }
}
