import Foundation
import Testing
import TestSupport
@testable import ServiceSupport

/// The guardian deployment's system unit, drop-in, sysusers.d and tmpfiles.d
/// files: the embedded copies, `systemd-analyze verify` and the offline exposure
/// assessment of the instance, the hardening lines, and the home drop-in.
@Suite("GuardianUnit", .ownThread)
struct GuardianUnitTests {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let environment: [String: String] = {
        var environment = ProcessInfo.processInfo.environment
        environment["SYSTEMD_COLORS"] = "0"
        environment["SYSTEMD_PAGER"] = "cat"
        environment["PATH"] = (environment["PATH"].map { $0 + ":" } ?? "") + "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        return environment
    }()

    static let hasSystemdAnalyze = CommandRunner.locate("systemd-analyze", environment: environment) != nil
    static let noSystemdAnalyze: Comment = "systemd-analyze is not installed (Debian: apt-get install systemd): unit checks skipped"

    /// The highest overall exposure `systemd-analyze security` may give the instance.
    static let maximumExposure = 2.5
    /// What issue 26 holds both units to: the guardian's exposure before the workers got their
    /// own users (1.0), and no more for the worker launcher.
    static let issueExposure = 1.0

    /// The service's four: no CAP_SETUID/CAP_SETGID (the worker launcher starts the workers as
    /// their own users), so a guardian taken over cannot become any other user.
    static let fourCapabilities: Set<String> = ["CAP_DAC_READ_SEARCH", "CAP_DAC_OVERRIDE", "CAP_CHOWN", "CAP_FOWNER"]
    /// The worker launcher's two, and nothing else.
    static let launcherCapabilities: Set<String> = ["CAP_SETUID", "CAP_SETGID"]

    // MARK: - The embedded texts

    static let embedded: [String: String] = [
        "packaging/systemd/quarantine-guardian@.service": GuardianUnit.unitText,
        "packaging/systemd/quarantine-guardian-home.conf.in": GuardianUnit.homeDropInTemplate,
        "packaging/systemd/quarantine-worker-launcher.service": GuardianUnit.launcherUnitText,
        "packaging/sysusers.d/quarantine.conf": GuardianUnit.sysusers,
        "packaging/tmpfiles.d/quarantine.conf": GuardianUnit.tmpfiles,
    ]

    @Test(arguments: embedded.keys.sorted())
    func embeddedTextIsThePackagingFile(path: String) throws {
        let file = try Data(contentsOf: Self.packageRoot.appendingPathComponent(path))
        #expect(Data(try #require(Self.embedded[path]).utf8) == file, "run scripts/embed-guardian-unit.sh after editing \(path)")
    }

    // MARK: - The unit's settings

    /// The unit's `Key=value` lines of one section, comments left out.
    static func settings(_ unit: String, section: String) -> [(key: String, value: String)] {
        var current = ""
        var result: [(key: String, value: String)] = []
        for raw in unit.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") { current = line; continue }
            guard current == "[\(section)]", let equals = line.firstIndex(of: "=") else { continue }
            result.append((String(line[..<equals]), String(line[line.index(after: equals)...])))
        }
        return result
    }

    static func values(_ key: String, section: String = "Service", unit: String = GuardianUnit.unitText) -> [String] {
        settings(unit, section: section).filter { $0.key == key }.map(\.value)
    }

    @Test(arguments: [(GuardianUnit.unitText, fourCapabilities), (GuardianUnit.launcherUnitText, launcherCapabilities)])
    func capabilitiesAreExactlyTheirs(unit: String, expected: Set<String>) {
        for key in ["AmbientCapabilities", "CapabilityBoundingSet"] {
            let lines = Self.values(key, unit: unit)
            #expect(lines.count == 1, "\(key) should be set once: \(lines)")
            let capabilities = lines.flatMap { $0.split(separator: " ").map(String.init) }
            #expect(capabilities.count == expected.count && Set(capabilities) == expected, "\(key)=\(lines)")
        }
    }

    @Test func guardianWantsTheLauncher() {
        #expect(Self.values("Wants", section: "Unit") == [GuardianUnit.launcherUnitName])
        #expect(Self.values("After", section: "Unit") == [GuardianUnit.launcherUnitName])
    }

    @Test func launcherUnitHasTheRequiredSettings() {
        let service = Dictionary(Self.settings(GuardianUnit.launcherUnitText, section: "Service").map { ($0.key, $0.value) },
                                 uniquingKeysWith: { first, second in first + "\n" + second })
        let required: [String: String] = [
            "Type": "notify", "NotifyAccess": "main", "ExecStart": "/usr/bin/quarantine worker-launcher", "Restart": "on-failure",
            "KillMode": "control-group", "User": "quarantine", "Group": "quarantine", "NoNewPrivileges": "yes",
            "ProtectSystem": "strict", "ProtectHome": "yes", "ReadWritePaths": "/run/quarantine",
            "PrivateNetwork": "yes", "RestrictAddressFamilies": "AF_UNIX", "IPAddressDeny": "any",
            "SystemCallArchitectures": "native", "SystemCallErrorNumber": "EPERM", "PrivateTmp": "yes", "PrivateDevices": "yes",
            "DevicePolicy": "closed", "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes", "ProtectKernelLogs": "yes",
            "ProtectControlGroups": "yes", "ProtectClock": "yes", "ProtectHostname": "yes", "ProtectProc": "invisible", "ProcSubset": "pid",
            "RestrictNamespaces": "yes", "RestrictRealtime": "yes", "RestrictSUIDSGID": "yes", "LockPersonality": "yes",
            "MemoryDenyWriteExecute": "yes", "KeyringMode": "private", "UMask": "0077", "RemoveIPC": "yes", "PrivateMounts": "yes",
        ]
        for (key, value) in required.sorted(by: { $0.key < $1.key }) {
            #expect(service[key] == value, "\(key)= is \(service[key] ?? "unset"), wanted \(value)")
        }
        let filters = Self.values("SystemCallFilter", unit: GuardianUnit.launcherUnitText)
        #expect(filters.first == "@system-service" && filters.contains("~@resources"))
        // The workers it starts install their own seccomp filter and Landlock.
        #expect(filters.contains { $0.contains("seccomp") && $0.contains("landlock_restrict_self") })
        #expect(service["PrivateUsers"] == nil && service["DynamicUser"] == nil, "the workers need real users of their own")
    }

    @Test func unitHasTheRequiredSettings() {
        let service = Dictionary(Self.settings(GuardianUnit.unitText, section: "Service").map { ($0.key, $0.value) },
                                 uniquingKeysWith: { first, second in first + "\n" + second })
        let required: [String: String] = [
            "Type": "notify", "NotifyAccess": "main", "ExecStart": "/usr/bin/quarantine guardian serve --user %I",
            "ExecReload": "/bin/kill -HUP $MAINPID", "WatchdogSec": "30", "Restart": "on-failure", "RestartSec": "5",
            "RestartPreventExitStatus": "78", "KillMode": "mixed", "TimeoutStopSec": "10", "Nice": "10",
            "IOSchedulingClass": "idle", "MemoryMax": "1G", "TasksMax": "64",
            "User": "quarantine", "Group": "quarantine", "NoNewPrivileges": "yes",
            "ProtectSystem": "strict", "ProtectHome": "tmpfs",
            "PrivateNetwork": "yes", "RestrictAddressFamilies": "AF_UNIX", "IPAddressDeny": "any",
            "SystemCallArchitectures": "native", "SystemCallErrorNumber": "EPERM",
            "PrivateTmp": "yes", "PrivateDevices": "yes", "DevicePolicy": "closed",
            "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes", "ProtectKernelLogs": "yes",
            "ProtectControlGroups": "yes", "ProtectClock": "yes", "ProtectHostname": "yes", "ProtectProc": "invisible",
            "RestrictNamespaces": "yes", "RestrictRealtime": "yes", "RestrictSUIDSGID": "yes", "LockPersonality": "yes",
            "KeyringMode": "private", "UMask": "0077",
        ]
        for (key, value) in required.sorted(by: { $0.key < $1.key }) {
            #expect(service[key] == value, "\(key)= is \(service[key] ?? "unset"), wanted \(value)")
        }
        #expect(Self.values("SystemCallFilter").first == "@system-service")
        // The analysis worker installs its own filter with seccomp(), which @system-service lacks.
        #expect(Self.values("SystemCallFilter").contains("seccomp"))
        #expect(Self.values("MemoryDenyWriteExecute") == ["yes"])
        #expect(Self.values("StateDirectory") == ["quarantine/%I"])
        #expect(Self.values("Documentation", section: "Unit") == ["man:quarantine(1)"])
        #expect(Self.values("WantedBy", section: "Install") == ["multi-user.target"])
        // What would break the service: no user namespace (capabilities over the
        // child's files), no hidden or read-only homes (the drop-in binds one in).
        #expect(service["PrivateUsers"] == nil)
        #expect(service["DynamicUser"] == nil)
        #expect(Self.values("ProtectHome") == ["tmpfs"])
    }

    @Test("everything the child can write is reachable: the host's /tmp and /var/tmp at side paths (its own stay private), its runtime folder through the host's /run/user at a side path, removable media writable")
    func hostTemporaryFoldersAndMediaAreReachable() {
        #expect(Self.values("ReadWritePaths") == ["/var/lib/quarantine/%I /run/quarantine /etc/quarantine", "-/media -/run/media"])
        #expect(Self.values("PrivateTmp") == ["yes"])
        let binds = Self.values("BindPaths").flatMap { $0.split(separator: " ").map(String.init) }
        // The side paths are the ones the service looks for (SharedFolder.sidePaths, SharedFolder.runtimeSidePath).
        #expect(binds == ["/tmp:/run/quarantine/host/tmp", "/var/tmp:/run/quarantine/host/var-tmp", "-/run/user:/run/quarantine/host/run-user"])
    }

    /// Every hardening setting has a comment right above it (or above the group
    /// of settings it belongs to) saying why.
    @Test(arguments: [GuardianUnit.unitText, GuardianUnit.launcherUnitText])
    func everySettingIsExplained(unit: String) {
        let lines = unit.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let hardening: Set<String> = [
            "User", "Group", "AmbientCapabilities", "CapabilityBoundingSet", "NoNewPrivileges", "RestrictSUIDSGID",
            "KeyringMode", "UMask", "RemoveIPC", "ProtectSystem", "ReadWritePaths", "ProtectHome", "PrivateTmp",
            "PrivateDevices", "DevicePolicy", "PrivateMounts", "ProtectKernelTunables", "ProtectKernelModules",
            "ProtectKernelLogs", "ProtectControlGroups", "ProtectClock", "ProtectHostname", "ProtectProc",
            "PrivateNetwork", "RestrictAddressFamilies", "IPAddressDeny", "RestrictNamespaces", "RestrictRealtime",
            "LockPersonality", "MemoryDenyWriteExecute", "SystemCallArchitectures", "SystemCallFilter",
            "SystemCallErrorNumber", "ProcSubset", "KillMode", "MemoryMax", "TasksMax",
        ]
        for (index, line) in lines.enumerated() {
            guard let key = line.split(separator: "=").first.map(String.init), hardening.contains(key) else { continue }
            // Walk up over the settings of the same group to the nearest comment.
            var above = index - 1
            while above >= 0, !lines[above].hasPrefix("#"), !lines[above].isEmpty, !lines[above].hasPrefix("[") { above -= 1 }
            #expect(above >= 0 && lines[above].hasPrefix("#"), "\(line) has no comment saying why")
        }
    }

    // MARK: - systemd-analyze

    /// A scratch folder with the instance `name` of the unit (ExecStart= naming an
    /// existing executable), its drop-ins, and a man page folder for man(1).
    struct Scratch {
        let root: URL
        var units: URL { root.appendingPathComponent("units") }
        var binary: String { root.appendingPathComponent("bin/quarantine").path }
        var environment: [String: String]

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("guardian-unit-\(UUID().uuidString.prefix(8))")
            environment = GuardianUnitTests.environment
            for sub in ["bin", "units", "man/man1"] {
                try FileManager.default.createDirectory(at: root.appendingPathComponent(sub), withIntermediateDirectories: true)
            }
            try "#!/bin/sh\nexit 0\n".write(toFile: binary, atomically: true, encoding: .utf8)
            chmod(binary, 0o755)
            // Documentation=man:quarantine(1) is checked by verify with man(1): offer
            // the page of this source tree when it is not installed.
            let page = GuardianUnitTests.packageRoot.appendingPathComponent("packaging/man/quarantine.1").path
            let installed = CommandRunner.run(["man", "-w", "quarantine"], environment: environment, timeout: .seconds(30)).succeeded
            if !installed && FileManager.default.fileExists(atPath: page) {
                try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("man/man1/quarantine.1").path,
                                                           withDestinationPath: page)
                environment["MANPATH"] = root.appendingPathComponent("man").path
            }
        }

        /// Writes `unit` (with /usr/bin/quarantine replaced) as `name`, and each
        /// drop-in as `name.d/<key>`; returns the unit's path.
        @discardableResult
        func write(_ name: String, unit: String = GuardianUnit.unitText, dropIns: [String: String] = [:]) throws -> String {
            let path = units.appendingPathComponent(name).path
            try unit.replacingOccurrences(of: "/usr/bin/quarantine", with: binary).write(toFile: path, atomically: true, encoding: .utf8)
            if !dropIns.isEmpty {
                let folder = units.appendingPathComponent(name + ".d")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                for (file, text) in dropIns {
                    try text.write(to: folder.appendingPathComponent(file), atomically: true, encoding: .utf8)
                }
            }
            return path
        }

        func verify(_ path: String) -> CommandOutcome {
            CommandRunner.run(["systemd-analyze", "verify", path], environment: environment, timeout: .seconds(60))
        }

        func cleanUp() { try? FileManager.default.removeItem(at: root) }
    }

    /// The output lines of a verify run: nothing at all is filtered.
    static func lines(_ outcome: CommandOutcome) -> [String] {
        (outcome.standardOutput + outcome.standardError).split(whereSeparator: \.isNewline).map(String.init)
    }

    @Test(.enabled(if: hasSystemdAnalyze, noSystemdAnalyze))
    func instancePassesSystemdAnalyzeVerify() throws {
        let scratch = try Scratch()
        defer { scratch.cleanUp() }
        for user in ["alice", "a-b"] {
            let path = try scratch.write(GuardianUnit.instanceName(user: user),
                                         dropIns: [GuardianUnit.homeDropInName: GuardianUnit.homeDropIn(home: "/home/\(user)")])
            let outcome = scratch.verify(path)
            #expect(outcome.exitStatus == 0, "\(outcome)")
            #expect(Self.lines(outcome).isEmpty, "systemd-analyze verify \(path): \(Self.lines(outcome))")
        }

        let launcher = try scratch.write(GuardianUnit.launcherUnitName, unit: GuardianUnit.launcherUnitText)
        let launcherOutcome = scratch.verify(launcher)
        #expect(launcherOutcome.exitStatus == 0, "\(launcherOutcome)")
        #expect(Self.lines(launcherOutcome).isEmpty, "systemd-analyze verify \(launcher): \(Self.lines(launcherOutcome))")

        // The check has teeth: a misspelt key, and a missing executable, are reported.
        let bad = try scratch.write("quarantine-guardian@bad.service",
                                    unit: GuardianUnit.unitText.replacingOccurrences(of: "WatchdogSec=30", with: "WatchdogSecs=30"))
        #expect(Self.lines(scratch.verify(bad)).contains { $0.contains("Unknown key") && $0.contains("WatchdogSecs") })
        let missing = try scratch.write("quarantine-guardian@missing.service",
                                        unit: GuardianUnit.unitText.replacingOccurrences(of: "/usr/bin/quarantine", with: "/nonexistent/quarantine"))
        let missingOutcome = scratch.verify(missing)
        #expect(!missingOutcome.succeeded || !Self.lines(missingOutcome).isEmpty)
    }

    /// The overall exposure from `systemd-analyze security --offline=yes`, and the
    /// whole table.
    static func exposure(of path: String, environment: [String: String]) throws -> (score: Double, table: String) {
        let outcome = CommandRunner.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", path],
                                        environment: environment, timeout: .seconds(60))
        #expect(outcome.succeeded, "\(outcome)")
        let table = outcome.standardOutput + outcome.standardError
        let line = try #require(table.split(whereSeparator: \.isNewline).last { $0.contains("Overall exposure level for ") },
                                "no exposure line in: \(table)")
        let afterColon = try #require(line.split(separator: ":").last)
        let number = try #require(afterColon.split(separator: " ").first.flatMap { Double($0) }, "cannot read \(line)")
        return (number, table)
    }

    @Test(.enabled(if: hasSystemdAnalyze, noSystemdAnalyze))
    func exposureIsAtMostTheMaximum() throws {
        let scratch = try Scratch()
        defer { scratch.cleanUp() }
        let name = GuardianUnit.instanceName(user: "alice")
        let path = try scratch.write(name, dropIns: [GuardianUnit.homeDropInName: GuardianUnit.homeDropIn(home: "/home/alice")])
        let (score, table) = try Self.exposure(of: path, environment: scratch.environment)
        #expect(score <= Self.maximumExposure, "exposure \(score) > \(Self.maximumExposure):\n\(table)")
        #expect(score <= Self.issueExposure, "exposure \(score) > \(Self.issueExposure) (issue 26):\n\(table)")
        #expect(table.contains("✓ CapabilityBoundingSet=~CAP_SET(UID|GID|PCAP)"), "the guardian may change its user:\n\(table)")
        let launcher = try scratch.write(GuardianUnit.launcherUnitName, unit: GuardianUnit.launcherUnitText)
        let (launcherScore, launcherTable) = try Self.exposure(of: launcher, environment: scratch.environment)
        #expect(launcherScore <= Self.issueExposure, "the launcher's exposure \(launcherScore) > \(Self.issueExposure):\n\(launcherTable)")
        #expect(table.contains("✓ PrivateNetwork="))
        #expect(table.contains("✓ MemoryDenyWriteExecute="))
        #expect(table.contains("✓ CapabilityBoundingSet=~CAP_SYS_ADMIN"))

        // The parse has teeth: a weakened unit scores worse.
        let weak = try scratch.write("quarantine-guardian@weak.service", unit: GuardianUnit.unitText
            .replacingOccurrences(of: "\nPrivateNetwork=yes\n", with: "\n")
            .replacingOccurrences(of: "\nCapabilityBoundingSet=", with: "\n#"))
        #expect(try Self.exposure(of: weak, environment: scratch.environment).score > score)
    }

    @Test(.enabled(if: hasSystemdAnalyze, noSystemdAnalyze))
    func checkScriptAgrees() throws {
        let scratch = try Scratch()
        defer { scratch.cleanUp() }
        let script = Self.packageRoot.appendingPathComponent("packaging/systemd/check-guardian-unit.sh").path
        let outcome = CommandRunner.run(["bash", script, "--score", "--max", String(Self.maximumExposure), scratch.binary],
                                        environment: scratch.environment, timeout: .seconds(120))
        #expect(outcome.succeeded, "\(outcome)")
        let path = try scratch.write(GuardianUnit.instanceName(user: "alice"),
                                     dropIns: [GuardianUnit.homeDropInName: GuardianUnit.homeDropIn(home: "/home/alice")])
        let score = try Self.exposure(of: path, environment: scratch.environment).score
        #expect(Double(outcome.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)) == score)

        let strict = CommandRunner.run(["bash", script, "--score", "--max", "0.1", scratch.binary],
                                       environment: scratch.environment, timeout: .seconds(120))
        #expect(strict.exitStatus == 1, "\(strict)")
    }

    // MARK: - Names and the home drop-in

    @Test func instanceNames() {
        #expect(GuardianUnit.unitName == "quarantine-guardian@.service")
        #expect(GuardianUnit.instanceName(user: "alice") == "quarantine-guardian@alice.service")
        #expect(GuardianUnit.instanceName(user: "_kid2") == "quarantine-guardian@_kid2.service")
        #expect(GuardianUnit.instanceName(user: "a-b") == #"quarantine-guardian@a\x2db.service"#)
        #expect(GuardianUnit.instanceName(user: ".x") == #"quarantine-guardian@\x2ex.service"#)
    }

    @Test(.enabled(if: CommandRunner.locate("systemd-escape", environment: environment) != nil, "systemd-escape is not installed"))
    func instanceNamesMatchSystemdEscape() {
        for user in ["alice", "a-b", "_x_", "bob-2-c", "élodie", "a b", "a.b", ".hidden", "a\\b"] {
            let outcome = CommandRunner.run(["systemd-escape", "--template=quarantine-guardian@.service", "--", user],
                                            environment: Self.environment, timeout: .seconds(30))
            #expect(outcome.standardOutput.trimmingCharacters(in: .newlines) == GuardianUnit.instanceName(user: user), "\(user)")
        }
    }

    @Test func homeDropInRendering() {
        #expect(!GuardianUnit.homeDropInTemplate.contains("BindPaths=/"))
        #expect(GuardianUnit.homeDropInTemplate.components(separatedBy: GuardianUnit.homePlaceholder).count == 2,
                "the placeholder appears once, on the BindPaths= line")
        let alice = GuardianUnit.homeDropIn(home: "/home/alice")
        #expect(alice.contains("\n[Service]\nBindPaths=/home/alice\n"))
        #expect(!alice.contains(GuardianUnit.homePlaceholder))
        #expect(alice.hasPrefix("#"))

        #expect(GuardianUnit.bindPathsEntry("/home/alice") == "/home/alice")
        #expect(GuardianUnit.bindPathsEntry("/srv/home/a.b-c_d+e@f") == "/srv/home/a.b-c_d+e@f")
        #expect(GuardianUnit.bindPathsEntry("/home/Anne Marie") == #""/home/Anne Marie""#)
        #expect(GuardianUnit.bindPathsEntry("/home/a:b") == #""/home/a:b""#)
        #expect(GuardianUnit.bindPathsEntry("/home/100%") == #""/home/100%%""#)
        #expect(GuardianUnit.bindPathsEntry(#"/home/back\slash"#) == #""/home/back\\slash""#)
        #expect(GuardianUnit.bindPathsEntry(#"/home/say "hi""#) == #""/home/say "'"'"hi"'"'"""#)
        #expect(GuardianUnit.bindPathsEntry("/home/it's") == #""/home/it's""#)
        #expect(GuardianUnit.bindPathsEntry("/home/élodie") == #""/home/élodie""#)
    }

    @Test func homeProblems() {
        #expect(GuardianUnit.homeProblem("/home/alice") == nil)
        #expect(GuardianUnit.homeProblem("/home/a b") == nil)
        #expect(GuardianUnit.homeProblem("/home/100%/x:y") == nil)
        #expect(GuardianUnit.homeProblem("home/alice")?.contains("not an absolute path") == true)
        #expect(GuardianUnit.homeProblem("")?.contains("not an absolute path") == true)
        #expect(GuardianUnit.homeProblem("/")?.contains("no user's home") == true)
        #expect(GuardianUnit.homeProblem("/home/../etc")?.contains("..") == true)
        #expect(GuardianUnit.homeProblem("/home/a\nb")?.contains("newline") == true)
        #expect(GuardianUnit.homeProblem("/home/a\rb") != nil)
        #expect(GuardianUnit.homeProblem("/home/" + String(repeating: "x", count: 256)) != nil)
    }

    /// Odd homes render to drop-ins that systemd parses without a word, each as
    /// one absolute path; written naively, the same homes are rejected.
    @Test(.enabled(if: hasSystemdAnalyze, noSystemdAnalyze))
    func oddHomesParse() throws {
        let scratch = try Scratch()
        defer { scratch.cleanUp() }
        let homes = ["/home/Anne Marie", "/home/ lead and trail ", "/home/tab\there", "/home/a:b", "/home/100%",
                     #"/home/back\slash"#, #"/home/trailing\"#, #"/home/say "hi""#, "/home/it's", "/home/élodie",
                     "/home/%i%I%h", "/home/50%x", "/home/-dash", "//home//double/"]
        var dropIns: [String: String] = [:]
        for (index, home) in homes.enumerated() {
            #expect(GuardianUnit.homeProblem(home) == nil, "\(home)")
            dropIns["home\(index).conf"] = GuardianUnit.homeDropIn(home: home)
        }
        let path = try scratch.write(GuardianUnit.instanceName(user: "odd"), dropIns: dropIns)
        let outcome = scratch.verify(path)
        #expect(outcome.exitStatus == 0, "\(outcome)")
        #expect(Self.lines(outcome).isEmpty, "systemd-analyze verify: \(Self.lines(outcome))")

        // Without the quoting, each of these is misread or refused, and verify says so.
        for home in ["/home/Anne Marie", "/home/50%x", #"/home/say "hi""#] {
            let naive = try scratch.write(GuardianUnit.instanceName(user: "naive"), dropIns: [
                GuardianUnit.homeDropInName: GuardianUnit.homeDropInTemplate.replacingOccurrences(of: GuardianUnit.homePlaceholder, with: home),
            ])
            #expect(!Self.lines(scratch.verify(naive)).isEmpty, "verify accepted the unquoted \(home)")
        }
    }
}
