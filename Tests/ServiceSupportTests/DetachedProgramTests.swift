import Foundation
import Testing
@testable import ServiceSupport

/// Desktop programs started for the person (a viewer, the help page's browser).
@Suite("Detached programs")
struct DetachedProgramTests {
    static func folder(with programs: [String]) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("detached-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for name in programs {
            _ = FileManager.default.createFile(atPath: folder + "/" + name, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
        }
        return folder
    }

    @Test("outside systemd the program itself; under systemd (INVOCATION_ID) a transient unit through systemd-run --user, with the session's display variables; nothing when it is not installed")
    func desktopCommand() throws {
        let bin = try Self.folder(with: ["xdg-open", "systemd-run"]); defer { try? FileManager.default.removeItem(atPath: bin) }
        let plain = ["PATH": bin, "DISPLAY": ":3"]
        #expect(DetachedProgram.desktopCommand("xdg-open", ["/run/user/1/quarantine-view/p.jpg"], environment: plain) == [bin + "/xdg-open", "/run/user/1/quarantine-view/p.jpg"])
        var service = plain
        service["INVOCATION_ID"] = "0123"
        service["WAYLAND_DISPLAY"] = "wayland-0"
        #expect(DetachedProgram.desktopCommand("xdg-open", ["x.jpg"], environment: service)
                == [bin + "/systemd-run", "--user", "--collect", "--quiet", "--no-block", "--setenv=DISPLAY=:3", "--setenv=WAYLAND_DISPLAY=wayland-0",
                    "--", bin + "/xdg-open", "x.jpg"])
        #expect(DetachedProgram.desktopCommand("no-such-viewer", ["x.jpg"], environment: service) == nil)
    }

    @Test("a started program runs in its own session and is reaped")
    func starts() throws {
        let folder = try Self.folder(with: []); defer { try? FileManager.default.removeItem(atPath: folder) }
        let out = folder + "/out"
        let pid = try DetachedProgram.start(["/bin/sh", "-c", "ps -o sid= -p $$ > \(out)"], environment: ["PATH": "/usr/bin:/bin"]).get()
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline && (FileManager.default.contents(atPath: out)?.isEmpty ?? true) { usleep(20_000) }
        let sid = try String(contentsOfFile: out, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(sid == "\(pid)", "its own session")
        usleep(200_000)
        #expect(kill(pid, 0) != 0, "reaped, no zombie left")
    }
}
