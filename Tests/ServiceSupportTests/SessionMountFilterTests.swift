import Foundation
import Testing
import TestSupport
@testable import ServiceSupport

/// What `guardian enable`/`disable` write for pam_quarantine and what `status`/`doctor` read back (issue 26).
@Suite("Session mount filter", .ownThread)
struct SessionMountFilterTests {
    /// Debian 12's common-session as pam-auth-update writes it.
    static let debianStack = """
        #
        # /etc/pam.d/common-session - session-related modules common to all services
        #
        # here are the per-package modules (the "Primary" block)
        session\t[default=1]\t\t\tpam_permit.so
        # here's the fallback if no module succeeds
        session\trequisite\t\t\tpam_deny.so
        session\trequired\t\t\tpam_permit.so
        # and here are more per-package modules (the "Additional" block)
        session\trequired\tpam_unix.so 
        session\toptional\tpam_systemd.so 
        # end of pam-auth-update config

        """

    func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("session-filter-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path + "/pam.d", withIntermediateDirectories: true)
        return path
    }

    @Test("the line goes after pam-auth-update's managed block, once; removing it gives back the file byte for byte")
    func stackText() {
        let added = SessionMountFilter.adding(to: Self.debianStack)
        #expect(added.hasPrefix(Self.debianStack), "pam-auth-update keeps what follows its end marker")
        #expect(added.hasSuffix(SessionMountFilter.pamLine + "\n"))
        #expect(SessionMountFilter.adding(to: added) == added, "idempotent")
        #expect(SessionMountFilter.hasLine(added) && !SessionMountFilter.hasLine(Self.debianStack))
        #expect(SessionMountFilter.removing(from: added) == Self.debianStack)
        #expect(!SessionMountFilter.hasLine("#session required pam_quarantine.so\n"), "a commented-out line does not count")
        #expect(SessionMountFilter.hasLine("session required /usr/local/lib/security/pam_quarantine.so list=/x\n"))
    }

    @Test("install and remove on a PAM folder: both stacks, idempotent; a folder without them is refused with what to do")
    func installRemove() throws {
        let root = try folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        for stack in SessionMountFilter.stacks { try Self.debianStack.write(toFile: root + "/pam.d/" + stack, atomically: true, encoding: .utf8) }
        let filter = SessionMountFilter(pamFolder: root + "/pam.d", listFile: root + "/protected-uids", moduleFolder: root)
        #expect(try filter.installLines() == SessionMountFilter.stacks)
        #expect(try filter.installLines() == [])
        #expect(filter.stackState().allSatisfy { $0.hasLine })
        #expect(try filter.removeLines() == SessionMountFilter.stacks)
        #expect(try String(contentsOfFile: root + "/pam.d/common-session", encoding: .utf8) == Self.debianStack)
        let bare = SessionMountFilter(pamFolder: root + "/nothing", listFile: root + "/protected-uids", moduleFolder: root)
        #expect(throws: ServiceError.self) { try bare.installLines() }
    }

    @Test("the list: uids added and removed with their names as comments, 0644; what the module would refuse is refused here too")
    func list() throws {
        let root = try folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let filter = SessionMountFilter(pamFolder: root + "/pam.d", listFile: root + "/protected-uids", moduleFolder: root)
        #expect(try filter.protectedUIDs() == [])
        #expect(try filter.set(uid: 1002, name: "sam", protected: true) == [1002])
        #expect(try filter.set(uid: 1001, name: "ann", protected: true) == [1001, 1002])
        #expect(try filter.set(uid: 1002, name: "sam", protected: true) == [1001, 1002])
        let text = try String(contentsOfFile: filter.listFile, encoding: .utf8)
        #expect(text.contains("1001\t# ann") && text.contains("1002\t# sam"))
        var info = stat()
        stat(filter.listFile, &info)
        #expect(info.st_mode & 0o777 == 0o644)
        #expect(try filter.set(uid: 1001, name: "ann", protected: false) == [1002])
        #expect(throws: ServiceError.self) { try SessionMountFilter.parse("1002\n12ab\n", file: "x") }
        #expect(throws: ServiceError.self) { try SessionMountFilter.parse("99999999999\n", file: "x") }
        #expect(try SessionMountFilter.parse("# c\n  7 # x\n\n", file: "x") == [7])
    }

    @Test("services that open sessions without common-session are named (Debian's runuser), the others are covered")
    func servicesWithout() throws {
        let root = try folder()
        let pam = root + "/pam.d"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try SessionMountFilter.adding(to: Self.debianStack).write(toFile: pam + "/common-session", atomically: true, encoding: .utf8)
        try "session required pam_env.so\n@include common-session\n".write(toFile: pam + "/su", atomically: true, encoding: .utf8)
        try "auth include su\nsession include su\n".write(toFile: pam + "/su-l", atomically: true, encoding: .utf8)
        try "session required pam_limits.so\nsession required pam_unix.so\n".write(toFile: pam + "/runuser", atomically: true, encoding: .utf8)
        try "session include runuser\n".write(toFile: pam + "/runuser-l", atomically: true, encoding: .utf8)
        try "password required pam_unix.so\n".write(toFile: pam + "/passwd", atomically: true, encoding: .utf8)
        let filter = SessionMountFilter(pamFolder: pam, listFile: root + "/protected-uids", moduleFolder: root)
        #expect(filter.servicesWithoutModule() == ["runuser", "runuser-l"])
    }

    /// A stand-in /proc: pid -> (uid, parent, Seccomp, NoNewPrivs).
    func fakeProc(_ processes: [Int32: (uid_t, Int32, Int, Int)]) throws -> String {
        let root = try folder() + "/proc"
        for (pid, (uid, parent, seccomp, nnp)) in processes {
            try FileManager.default.createDirectory(atPath: "\(root)/\(pid)", withIntermediateDirectories: true)
            try "Name:\tp\(pid)\nPPid:\t\(parent)\nUid:\t\(uid)\t\(uid)\t\(uid)\t\(uid)\nNoNewPrivs:\t\(nnp)\nSeccomp:\t\(seccomp)\n"
                .write(toFile: "\(root)/\(pid)/status", atomically: true, encoding: .utf8)
        }
        return root
    }

    @Test("coverage: a filter set by a privileged process counts, one the account set itself (no_new_privs) does not, unless inherited")
    func coverage() throws {
        let proc = try fakeProc([
            1: (0, 0, 0, 0),
            10: (0, 1, 2, 0),        // su after pam_quarantine: root, filtered, no no_new_privs
            11: (1002, 10, 2, 0),    // the child's shell
            12: (1002, 11, 2, 1),    // Chromium's renderer: its own filter on top, no_new_privs
            20: (1002, 1, 0, 0),     // a session from before: no filter
            21: (1002, 20, 2, 1),    // filtered by itself (no_new_privs): not covered
            30: (1003, 1, 0, 0),     // another account
        ])
        let coverage = SessionMountFilter.coverage(uid: 1002, proc: proc)
        #expect(coverage.covered == [11, 12])
        #expect(coverage.uncovered.map(\.pid) == [20, 21])
    }
}
