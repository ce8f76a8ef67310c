import Foundation
import Testing
import ServiceSupport

/// pam_quarantine.so loaded by the real libpam (issue 26, private mounts): sessions opened with
/// scripts/pam-session.py (pam_start_confdir, pam_open_session, then the account's uid, as su
/// does) from a PAM folder of the test's own, with the line `guardian enable` writes.
@Suite("pam_quarantine", .enabled(if: getuid() == 0, "opening sessions for other accounts needs root"))
struct PAMModuleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    static let python = "/usr/bin/python3"

    /// The module, built once by pam/build.sh (what make build, make deb and make install run).
    static let module: String = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pam-quarantine-module-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        chmod(folder, 0o755)
        let (status, _, error) = run(root + "/pam/build.sh", [folder + "/" + SessionMountFilter.moduleName])
        if status != 0 { print("pam/build.sh: \(error)") }
        return folder + "/" + SessionMountFilter.moduleName
    }()

    /// A fresh folder (0755, root's) with `etc/` for the list and `pam/qtest`, the stack.
    struct Setup {
        let folder: String
        var list: String { folder + "/etc/protected-uids" }
        var pam: String { folder + "/pam" }
        var target: String { folder + "/target" }

        init(listed: [uid_t], line: String = SessionMountFilter.pamLine) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("pam-quarantine-\(UUID().uuidString)").path
            for sub in ["", "/etc", "/pam", "/target"] {
                try FileManager.default.createDirectory(atPath: folder + sub, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
                chmod(folder + sub, 0o755)
            }
            chmod(folder + "/target", 0o777)
            try writeList(listed.map(String.init).joined(separator: "\n") + "\n")
            // As Debian's common-session: pam_permit primes the stack, then the module's line.
            let moduleLine = line.replacingOccurrences(of: SessionMountFilter.moduleName, with: "\(PAMModuleTests.module) list=\(list)")
            try "session required pam_permit.so\n\(moduleLine)\n".write(toFile: pam + "/qtest", atomically: true, encoding: .utf8)
        }

        func writeList(_ text: String, mode: mode_t = 0o644) throws {
            unlink(list)
            try text.write(toFile: list, atomically: false, encoding: .utf8)
            chmod(list, mode)
        }

        /// Runs COMMAND in a session for USER; (exit status, standard output, standard error).
        func session(_ user: String, caller: String? = nil, _ command: [String]) -> (Int32, String, String) {
            var arguments = [PAMModuleTests.root + "/scripts/pam-session.py", "--confdir", pam]
            if let caller { arguments += ["--caller", caller] }
            return PAMModuleTests.run(PAMModuleTests.python, arguments + ["qtest", user, "--"] + command)
        }

        /// What scripts/mount-probe.py says in a session for USER.
        func probe(_ user: String) throws -> [String: Any] {
            let (status, output, error) = session(user, [PAMModuleTests.python, PAMModuleTests.root + "/scripts/mount-probe.py", target])
            #expect(status == 0, "\(error)")
            return try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any] ?? [:]
        }

        func remove() { try? FileManager.default.removeItem(atPath: folder) }
    }

    static func uid(_ name: String) -> uid_t { getpwnam(name)!.pointee.pw_uid }

    /// Runs a program by its path; (exit status, standard output, standard error).
    static func run(_ program: String, _ arguments: [String]) -> (Int32, String, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return (-1, "", "\(program): \(error)") }
        let collected = ErrorCollector(error.fileHandleForReading)
        let out = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), collected.text())
    }

    /// Reads a pipe to its end on a thread of its own (so neither pipe can fill up and stall the program).
    final class ErrorCollector: @unchecked Sendable {
        let lock = NSLock()
        var data = Data()
        let done = DispatchSemaphore(value: 0)
        init(_ handle: FileHandle) {
            Thread.detachNewThread { [self] in
                let read = handle.readDataToEndOfFile()
                lock.withLock { data = read }
                done.signal()
            }
        }
        func text() -> String { done.wait(); return lock.withLock { String(decoding: data, as: UTF8.self) } }
    }

    @Test("the module was built, and exports nothing but the PAM session entry points, with no Swift runtime")
    func built() throws {
        #expect(FileManager.default.fileExists(atPath: Self.module), "\(Self.module)")
        let needed = Self.run("/usr/bin/readelf", ["-d", Self.module]).1
        #expect(needed.contains("libpam.so.0"))
        #expect(!needed.contains("libswift") && !needed.contains("libFoundation") && !needed.contains("RUNPATH") && !needed.contains("RPATH"), "\(needed)")
        let symbols = Self.run("/usr/bin/nm", ["-D", "--defined-only", Self.module]).1
        let names = symbols.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }
        #expect(Set(names) == ["pam_sm_open_session", "pam_sm_close_session"], "\(names)")
    }

    @Test("a listed account's session cannot mount by any call of the family, yet makes user namespaces and chroots")
    func listedCannotMount() throws {
        let setup = try Setup(listed: [Self.uid("nobody")])
        defer { setup.remove() }
        let report = try setup.probe("nobody")
        for call in ["mount", "fsopen", "fsconfig", "fsmount", "move_mount", "open_tree", "fspick", "mount_setattr", "pivot_root"] {
            #expect(report[call] as? String == "EPERM", "\(call): \(report)")
        }
        #expect(report["mounted"] as? Int == 0, "\(report)")
        #expect(report["unshare"] as? String == "ok" && report["chroot"] as? String == "ok", "browsers' sandboxes need these: \(report)")
        // unshare(1) changes its new namespace's propagation with mount(): still allowed.
        let (status, _, error) = setup.session("nobody", ["unshare", "-r", "-m", "sh", "-c", "grep -q '^Seccomp:.*2' /proc/self/status"])
        #expect(status == 0, "unshare -r -m: \(error)")
        let (mounted, _, _) = setup.session("nobody", ["unshare", "-r", "-m", "mount", "-t", "tmpfs", "none", setup.target])
        #expect(mounted != 0, "mount(8) inside the namespace is refused")
    }

    @Test("an account that is not listed is untouched: no filter, every mount call works in its own namespace")
    func otherAccountsUntouched() throws {
        let setup = try Setup(listed: [Self.uid("nobody")])
        defer { setup.remove() }
        let (_, status, _) = setup.session("daemon", ["cat", "/proc/self/status"])
        #expect(status.contains("Seccomp:\t0"), "\(status)")
        let report = try setup.probe("daemon")
        #expect(report["mount"] as? String == "ok" && report["fsopen"] as? String == "ok" && (report["mounted"] as? Int ?? 0) > 0, "\(report)")
    }

    @Test("a session opened by an unprivileged program for a listed account is refused: the filter cannot be set")
    func unprivilegedCallerRefused() throws {
        let setup = try Setup(listed: [Self.uid("nobody")])
        defer { setup.remove() }
        let (status, _, error) = setup.session("nobody", caller: "nobody", ["true"])
        #expect(status == 3, "\(error)")
        #expect(error.contains("cannot be set up"), "\(error)")
    }

    @Test("a list that cannot be trusted refuses the sessions of accounts with a guardian configuration, and only theirs",
          arguments: ["group-writable", "owned by another account", "a line that is not a uid", "missing", "a symbolic link"])
    func untrustedList(_ how: String) throws {
        let setup = try Setup(listed: [Self.uid("nobody")])
        defer { setup.remove() }
        // nobody has a configuration beside the list, as 'guardian enable' writes /etc/quarantine/USER.toml.
        _ = FileManager.default.createFile(atPath: setup.folder + "/etc/nobody.toml", contents: Data())
        switch how {
        case "group-writable": chmod(setup.list, 0o664)
        case "owned by another account": chown(setup.list, Self.uid("daemon"), 0)
        case "a line that is not a uid": try setup.writeList("\(Self.uid("nobody"))\n12ab\n")
        case "missing": unlink(setup.list)
        default:
            try "\(Self.uid("nobody"))\n".write(toFile: setup.folder + "/real-list", atomically: true, encoding: .utf8)
            unlink(setup.list)
            symlink(setup.folder + "/real-list", setup.list)
        }
        let (status, _, error) = setup.session("nobody", ["true"])
        #expect(status == 3, "\(how): \(error)")
        #expect(error.contains("cannot be checked"), "\(error)")
        let (other, _, otherError) = setup.session("daemon", ["true"])
        #expect(other == 0, "an account without a configuration goes on: \(otherError)")
    }

    @Test("the stack's line: a refusal ends the session (default=die), a module file that is gone locks nobody out")
    func controlField() throws {
        let refused = try Setup(listed: [Self.uid("nobody")])
        defer { refused.remove() }
        let (status, _, _) = refused.session("nobody", caller: "nobody", ["true"])
        #expect(status == 3)
        let gone = try Setup(listed: [Self.uid("nobody")])
        defer { gone.remove() }
        let text = try String(contentsOfFile: gone.pam + "/qtest", encoding: .utf8).replacingOccurrences(of: Self.module, with: "/nonexistent/pam_quarantine.so")
        try text.write(toFile: gone.pam + "/qtest", atomically: true, encoding: .utf8)
        let (goneStatus, _, goneError) = gone.session("nobody", ["true"])
        #expect(goneStatus == 0, "\(goneError)")
    }
}
