import Foundation
import Testing
import TestSupport
@testable import ServiceSupport

/// The user unit: its template, `systemd-analyze verify` on the rendered unit,
/// and install/status/uninstall on this machine, which has no user manager.
@Suite("ServiceUnit", .ownThread)
struct ServiceUnitTests {
    static let packagingTemplate = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("packaging/systemd/quarantine.service.in")

    /// A home with an executable `bin/quarantine`, and an environment that points
    /// systemctl at it and at an empty runtime directory: no user bus, whatever the
    /// machine running the test has.
    struct Home {
        let root: URL
        var binary: String { root.appendingPathComponent("bin/quarantine").path }
        var environment: [String: String] {
            ["HOME": root.path,
             "XDG_CONFIG_HOME": root.appendingPathComponent("config").path,
             "XDG_RUNTIME_DIR": root.appendingPathComponent("run").path,
             "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
        }

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-unit-\(UUID().uuidString.prefix(8))")
            for sub in ["bin", "config", "run"] {
                try FileManager.default.createDirectory(at: root.appendingPathComponent(sub), withIntermediateDirectories: true)
            }
            chmod(root.appendingPathComponent("run").path, 0o700)
            try "#!/bin/sh\nexit 0\n".write(toFile: binary, atomically: true, encoding: .utf8)
            chmod(binary, 0o755)
        }

        func cleanUp() { try? FileManager.default.removeItem(at: root) }
    }

    @Test func embeddedTemplateIsThePackagingFile() throws {
        let file = try String(contentsOf: Self.packagingTemplate, encoding: .utf8)
        #expect(ServiceUnit.defaultTemplate == file, "run scripts/embed-unit-template.sh after editing \(Self.packagingTemplate.path)")
    }

    @Test func templateHasTheRequiredSettings() {
        let lines = Set(ServiceUnit.defaultTemplate.split(separator: "\n").map(String.init))
        for required in ["[Unit]", "[Service]", "[Install]", "Documentation=man:quarantine(1)",
                         "Type=notify", "NotifyAccess=main", "ExecStart=@BINDIR@/quarantine agent",
                         "ExecReload=/bin/kill -HUP $MAINPID", "WatchdogSec=30", "Restart=on-failure", "RestartSec=5",
                         "TimeoutStopSec=10", "Nice=10", "CPUWeight=20", "IOSchedulingClass=idle", "KillMode=mixed",
                         "NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=%h", "PrivateTmp=yes",
                         "ProtectKernelTunables=yes", "ProtectKernelModules=yes", "ProtectControlGroups=yes",
                         "RestrictAddressFamilies=AF_UNIX", "RestrictNamespaces=yes", "LockPersonality=yes",
                         "MemoryDenyWriteExecute=yes", "SystemCallArchitectures=native", "MemoryMax=1G",
                         "WantedBy=default.target"] {
            #expect(lines.contains(required), "missing \(required)")
        }
        #expect(!lines.contains { $0.hasPrefix("ProtectHome=") && $0 != "ProtectHome=no" })
    }

    @Test func renderReplacesThePlaceholder() {
        let unit = ServiceUnit.render(template: ServiceUnit.defaultTemplate, binaryDirectory: "/opt/quarantine/bin/")
        #expect(!unit.contains("@BINDIR@"))
        #expect(unit.contains("\nExecStart=/opt/quarantine/bin/quarantine agent\n"))
        #expect(ServiceUnit.render(template: "ExecStart=@BINDIR@/quarantine", binaryDirectory: "/a/100%") == "ExecStart=/a/100%%/quarantine")
    }

    @Test func userUnitPath() {
        #expect(ServiceUnit.userUnitPath(environment: ["XDG_CONFIG_HOME": "/x/cfg", "HOME": "/home/u"]) == "/x/cfg/systemd/user/quarantine.service")
        #expect(ServiceUnit.userUnitPath(environment: ["HOME": "/home/u"]) == "/home/u/.config/systemd/user/quarantine.service")
        #expect(ServiceUnit.userUnitPath(environment: ["XDG_CONFIG_HOME": "relative", "HOME": "/home/u"]) == "/home/u/.config/systemd/user/quarantine.service")
    }

    /// `systemd-analyze --user verify` output lines that are not about the unit;
    /// seen in containers without a user manager. Anything else fails the test.
    static func isUnrelatedVerifyNoise(_ line: String) -> Bool {
        line.contains("/proc/") || line.contains("cgroup") || line.contains("Failed to lookup RuntimeDirectory")
    }

    static func verify(_ unitPath: String, home: Home) throws -> (status: Int32, problems: [String]) {
        let outcome = CommandRunner.run(["systemd-analyze", "--user", "verify", "--man=no", unitPath],
                                        environment: home.environment, timeout: .seconds(30))
        let lines = (outcome.standardError + outcome.standardOutput).split(whereSeparator: \.isNewline).map(String.init)
        return (outcome.exitStatus ?? -1, lines.filter { !isUnrelatedVerifyNoise($0) })
    }

    @Test func renderedUnitPassesSystemdAnalyzeVerify() throws {
        let home = try Home()
        defer { home.cleanUp() }
        let unitPath = home.root.appendingPathComponent("quarantine.service").path
        let unit = ServiceUnit.render(template: ServiceUnit.defaultTemplate, binaryDirectory: home.root.appendingPathComponent("bin").path)
        try unit.write(toFile: unitPath, atomically: true, encoding: .utf8)
        let (status, problems) = try Self.verify(unitPath, home: home)
        #expect(status == 0)
        #expect(problems.isEmpty, "systemd-analyze verify: \(problems)")

        // The check can fail: a misspelt key is reported.
        let badPath = home.root.appendingPathComponent("bad.service").path
        try unit.replacingOccurrences(of: "WatchdogSec=30", with: "WatchdogSecs=30").write(toFile: badPath, atomically: true, encoding: .utf8)
        let (_, badProblems) = try Self.verify(badPath, home: home)
        #expect(badProblems.contains { $0.contains("Unknown key") && $0.contains("WatchdogSecs") })
    }

    @Test func installWithoutUserManagerWritesTheUnitAndSaysSo() throws {
        let home = try Home()
        defer { home.cleanUp() }
        let environment = home.environment
        let unitPath = ServiceUnit.userUnitPath(environment: environment)

        let result = try ServiceUnit.install(binary: home.binary, environment: environment)
        #expect(result.unitPath == unitPath)
        let written = try String(contentsOfFile: unitPath, encoding: .utf8)
        #expect(written == ServiceUnit.render(template: ServiceUnit.defaultTemplate, binaryDirectory: home.root.appendingPathComponent("bin").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: (unitPath as NSString).deletingLastPathComponent)
            .filter { $0.hasSuffix(".tmp") }.isEmpty)

        // Honest: nothing is running, and the exact systemctl error is there.
        #expect(!result.started)
        #expect(result.userManagerUnreachable)
        let reload = try #require(result.steps.first)
        #expect(reload.command == ["systemctl", "--user", "daemon-reload"])
        #expect(!reload.succeeded)
        #expect(reload.standardError.contains("Failed to connect to bus"))
        #expect(result.advice == ServiceUnit.noUserManagerAdvice)
        #expect(result.description.contains("NOT running"))
        #expect(result.description.contains(reload.standardError.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(result.description.contains("loginctl enable-linger"))
        // `systemctl --user enable` needs no manager: the link is there for the next session.
        let wants = (unitPath as NSString).deletingLastPathComponent + "/default.target.wants/quarantine.service"
        #expect(result.enabled == ((try? FileManager.default.destinationOfSymbolicLink(atPath: wants)) != nil))

        let status = ServiceUnit.status(environment: environment)
        #expect(status.unitInstalled)
        #expect(status.unitPath == unitPath)
        #expect(status.managerError?.contains("Failed to connect to bus") == true)

        let removed = try ServiceUnit.uninstall(environment: environment)
        #expect(removed.wasInstalled)
        #expect(!removed.disabledAndStopped)
        #expect(removed.userManagerUnreachable)
        #expect(!FileManager.default.fileExists(atPath: unitPath))
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: wants)) == nil)
        #expect(!ServiceUnit.status(environment: environment).unitInstalled)

        let again = try ServiceUnit.uninstall(environment: environment)
        #expect(!again.wasInstalled)
        #expect(again.steps.isEmpty)
        #expect(again.description.contains("nothing to remove"))
    }

    @Test func installUsesAGivenTemplate() throws {
        let home = try Home()
        defer { home.cleanUp() }
        let templatePath = home.root.appendingPathComponent("custom.service.in").path
        try "[Service]\nExecStart=@BINDIR@/quarantine agent --custom\n".write(toFile: templatePath, atomically: true, encoding: .utf8)
        let result = try ServiceUnit.install(binary: home.binary, templatePath: templatePath, environment: home.environment)
        #expect(try String(contentsOfFile: result.unitPath, encoding: .utf8)
            == "[Service]\nExecStart=\(home.root.appendingPathComponent("bin").path)/quarantine agent --custom\n")
        _ = try ServiceUnit.uninstall(environment: home.environment)
    }

    @Test func installRefusesAnUnusableBinary() throws {
        let home = try Home()
        defer { home.cleanUp() }
        let missing = #expect(throws: ServiceError.self) {
            try ServiceUnit.install(binary: home.root.appendingPathComponent("bin/nothing").path, environment: home.environment)
        }
        #expect(missing?.code == .fileSystem)
        #expect(missing?.description.contains("not an executable file") == true)

        let misnamed = home.root.appendingPathComponent("bin/quarantine-bench").path
        try FileManager.default.copyItem(atPath: home.binary, toPath: misnamed)
        #expect(throws: ServiceError.self) { try ServiceUnit.install(binary: misnamed, environment: home.environment) }

        let spaced = home.root.appendingPathComponent("my bin")
        try FileManager.default.createDirectory(at: spaced, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: home.binary, toPath: spaced.appendingPathComponent("quarantine").path)
        #expect(throws: ServiceError.self) {
            try ServiceUnit.install(binary: spaced.appendingPathComponent("quarantine").path, environment: home.environment)
        }
        #expect(!FileManager.default.fileExists(atPath: ServiceUnit.userUnitPath(environment: home.environment)))
    }
}
