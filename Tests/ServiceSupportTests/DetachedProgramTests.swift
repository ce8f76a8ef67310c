import Foundation
import Locking
import Testing
import TestSupport
@testable import ServiceSupport

/// Desktop programs started for the person (a viewer, the help page's browser).
@Suite("Detached programs", .ownThread)
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
        // An absolute path (the agent's own binary, for the review page), its output kept out of the journal.
        #expect(DetachedProgram.desktopCommand(bin + "/xdg-open", ["review"], environment: plain, discardingOutput: true) == [bin + "/xdg-open", "review"])
        #expect(DetachedProgram.desktopCommand(bin + "/xdg-open", ["review"], environment: ["PATH": bin, "INVOCATION_ID": "1"], discardingOutput: true)
                == [bin + "/systemd-run", "--user", "--collect", "--quiet", "--no-block", "--property=StandardOutput=null", "--property=StandardError=journal",
                    "--", bin + "/xdg-open", "review"])
        #expect(DetachedProgram.desktopCommand(bin + "/missing", [], environment: plain) == nil)
        #expect(DetachedProgram.startsTransientUnits(environment: service) && !DetachedProgram.startsTransientUnits(environment: plain))
    }

    @Test("a started program's standard output can go nowhere, it keeps no descriptor of the starter's (close-on-exec or not), and its wait status reaches the caller once it is reaped")
    func discardsOutputAndTellsTheExit() async throws {
        let folder = try Self.folder(with: []); defer { try? FileManager.default.removeItem(atPath: folder) }
        let out = folder + "/out"
        let status = Locked<Int32?>(nil)
        // A descriptor without close-on-exec, as Foundation's Process leaves one in the programs it starts.
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        // Its standard output is /dev/null: what it writes there is lost, and readlink says where fd 1 points.
        let script = "where=$(readlink /proc/$$/fd/1); echo \"$where\" > \(out); test -e /proc/$$/fd/\(ends[1]) && echo inherited >> \(out); echo secret; exit 3"
        let pid = try DetachedProgram.start(["/bin/sh", "-c", script], environment: ["PATH": "/usr/bin:/bin"],
                                            discardingOutput: true, exited: { code in status.withLock { $0 = code } }).get()
        #expect(pid > 0)
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline && status.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(20)) }
        let code = try #require(status.withLock { $0 })
        #expect(code & 0x7f == 0 && (code >> 8) & 0xff == 3)
        let written = try String(contentsOfFile: out, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(written == "/dev/null", "where fd 1 pointed, then whether the pipe was inherited: \(written)")
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
