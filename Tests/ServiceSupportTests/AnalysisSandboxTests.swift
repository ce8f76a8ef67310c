import Foundation
import SandboxProbe
import Testing
import TestSupport
@testable import ServiceSupport

/// The analysis worker's sandbox, entered in a forked child (never in the test runner: it is
/// permanent for a process). The child tries what the sandbox must refuse and what the worker
/// still needs, one line per try; a control child does the same without entering it, so that a
/// sandbox that did nothing could not pass.
@Suite("Analysis sandbox")
struct AnalysisSandboxTests {
    /// What a probe child reported: "name RESULT" lines, and how it ended.
    struct Report: CustomStringConvertible {
        var results: [String: String] = [:]
        var text: String
        /// The raw wait status.
        var status: Int32

        var signal: Int32 { status & 0x7f }
        var exitCode: Int32? { signal == 0 ? (status >> 8) & 0xff : nil }
        subscript(_ name: String) -> String? { results[name] }
        var description: String { text }
    }

    /// A folder with the file "existing" (mode 0644, "original") and the folder "folder".
    static func makeFolder() throws -> URL {
        let url = URL(fileURLWithPath: "/tmp").appendingPathComponent("qsandbox-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let file = url.appendingPathComponent("existing")
        try Data("original".utf8).write(to: file)
        #expect(chmod(file.path, 0o644) == 0)
        try FileManager.default.createDirectory(at: url.appendingPathComponent("folder"), withIntermediateDirectories: false)
        return url
    }

    static func run(_ mode: Int32, in folder: URL) throws -> Report {
        var buffer = [CChar](repeating: 0, count: 64 << 10)
        let status = buffer.withUnsafeMutableBufferPointer { pointer in
            sandbox_probe_run(mode, folder.path, 30, pointer.baseAddress, pointer.count)
        }
        try #require(status != -1, "the probe child could not be started: \(String(cString: strerror(errno)))")
        let text = buffer.withUnsafeBufferPointer { pointer in
            String(decoding: pointer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        var report = Report(text: text, status: status)
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            report.results[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return report
    }

    static var isRoot: Bool { getuid() == 0 }

    /// Probes that must fail, with the errno they must fail with.
    static var refused: [(probe: String, error: String)] {
        var list = [
            // opening for writing, creating or truncating
            "open-write", "open-rdwr", "open-append", "open-trunc", "open-creat", "open-creat-rdonly", "open-tmpfile",
            // changing the file system
            "unlink", "unlinkat", "rename", "renameat2", "mkdir", "rmdir", "chmod", "fchmod", "fchmodat2", "chown",
            "truncate", "link", "symlink", "utimensat", "setxattr", "mknod", "file-setattr", "mount",
            "ioctl-getflags", "ioctl-setflags", "ioctl-tiocsti",
            // the network and new sockets, also from a thread started afterwards
            "socket-inet", "socket-inet6", "socket-unix", "socketpair", "thread-socket",
            // other processes
            "kill-parent", "kill-group", "kill-everyone", "tkill-self", "sigqueue-parent", "fcntl-setown",
            "process-vm-readv", "ptrace-peek", "pidfd-open", "shmat", "mq-open", "clone-newuser", "unshare-user", "execve",
            // identities and kernel facilities
            "setgroups", "setuid", "bpf", "keyctl", "perf-event-open", "io-uring-setup", "userfaultfd",
            // limits, priorities, CPUs of others (a sibling worker of the same user), new limits
            // even for itself, and file locks others would wait for
            "prlimit-set-self", "prlimit-set-parent", "setrlimit", "setpriority-parent", "setpriority-tid",
            "ioprio-set-parent", "sched-setaffinity-parent", "flock", "fcntl-setlk", "fcntl-ofd-setlk",
            // not on the allow-list
            "chdir", "personality",
        ].map { (probe: $0, error: "EPERM") }
        #if arch(x86_64)
        list += [(probe: "open-syscall-write", error: "EPERM"), (probe: "creat", error: "EPERM")]
        #endif
        // openat2 and clone3 hide their flags in memory: ENOSYS sends glibc back to openat and clone.
        list += [(probe: "openat2", error: "ENOSYS"), (probe: "clone3", error: "ENOSYS"), (probe: "unknown-call", error: "ENOSYS")]
        return list
    }

    /// Probes that must still work.
    static let allowed = [
        "open-read", "ioctl-fionread", "kill-self", "tgkill-self", "memfd-create", "memfd-write", "memfd-ftruncate",
        "sendmsg-fd3", "mmap", "mprotect", "thread", "clone-fork", "fd-3", "end",
        "prlimit-get", "setpriority-self", "ioprio-set-self", "sched-setaffinity-self",
    ]

    @Test("in a child that entered it, writing, changing files, sockets, exec and signals to others fail; reading, memfds, sendmsg on descriptor 3 and threads still work", .disabled(if: Sanitizers.thread, "ThreadSanitizer's runtime cannot start under the sandbox"))
    func refusesAndAllows() throws {
        let folder = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = try Self.run(Int32(SANDBOX_PROBE_ALL), in: folder)

        try #require(report["enter"] == "OK", "entering failed: \(report)")
        #expect(report.exitCode == 0, "the child ended with status \(report.status): \(report)")
        for (probe, error) in Self.refused {
            #expect(report[probe] == error, "\(probe): \(report[probe] ?? "no line")")
        }
        for probe in Self.allowed {
            #expect(report[probe] == "OK", "\(probe): \(report[probe] ?? "no line")")
        }
        #expect(report["read-content"] == "original")
        #expect(report["fd-20"] == "EBADF", "a descriptor above 3 survived")
        #expect(report["parent-message"] == "preview")
        #expect(report["parent-memfd"] == "decoded preview", "the memfd sent back over descriptor 3")

        // The parent sees the folder as it was.
        let file = folder.appendingPathComponent("existing")
        #expect(try String(contentsOf: file, encoding: .utf8) == "original")
        var info = stat()
        #expect(stat(file.path, &info) == 0 && info.st_mode & 0o7777 == 0o644)
        for name in ["fresh", "renamed", "newfolder", "hardlink", "softlink", "fifo"] {
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path), "\(name) was made")
        }
        var isFolder: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("folder").path, isDirectory: &isFolder) && isFolder.boolValue)
    }

    @Test("no capabilities are left (effective, permitted, inheritable, ambient; bounding when root), no_new_privs is set, a seccomp filter is on, the parent-death signal is SIGKILL, no core files", .disabled(if: Sanitizers.thread, "ThreadSanitizer's runtime cannot start under the sandbox"))
    func privilegesGone() throws {
        let folder = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = try Self.run(Int32(SANDBOX_PROBE_ALL), in: folder)
        try #require(report["enter"] == "OK", "entering failed: \(report)")
        if Self.isRoot {
            // Not vacuous: the child had capabilities before.
            #expect(report["before-CapEff"] != nil && report["before-CapEff"] != "0000000000000000")
            #expect(report["status-CapBnd"] == "0000000000000000")
        }
        for key in ["CapEff", "CapPrm", "CapInh", "CapAmb"] {
            #expect(report["status-\(key)"] == "0000000000000000", "\(key): \(report["status-\(key)"] ?? "no line")")
        }
        #expect(report["status-NoNewPrivs"] == "1")
        #expect(report["status-Seccomp"] == "2")
        #expect(report["pdeathsig"] == "\(SIGKILL)")
        #expect(report["rlimit-core"] == "0 0")
    }

    @Test("the control: the same child without the sandbox can do what the sandbox refuses (so the checks above mean something)", .disabled(if: Sanitizers.thread, "ThreadSanitizer's runtime cannot start in the probe child"))
    func controlWithoutSandbox() throws {
        let folder = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = try Self.run(Int32(SANDBOX_PROBE_WITHOUT_SANDBOX), in: folder)
        #expect(report["enter"] == nil)
        #expect(report["status-Seccomp"] == "0")
        for probe in ["open-write", "open-creat", "unlink", "socket-inet", "socket-unix", "socketpair", "kill-parent",
                      "kill-group", "process-vm-readv", "openat2", "clone3", "fd-20", "memfd-create", "sendmsg-fd3", "thread"] {
            #expect(report[probe] == "OK", "\(probe): \(report[probe] ?? "no line")")
        }
        #expect(report["thread-socket"] == "OK")
        #expect(report["ioctl-tiocsti"] == "ENOTTY")
        // Every refusal above is the sandbox's doing: without it each probe works or fails
        // otherwise. (A few need root for that; "unknown-call" is ENOSYS either way.)
        let needRoot: Set = ["setuid", "setgroups", "unshare-user", "clone-newuser", "mount", "userfaultfd"]
        for (probe, error) in Self.refused where probe != "unknown-call" && (Self.isRoot || !needRoot.contains(probe)) {
            #expect(report[probe] != error, "\(probe) fails with \(error) even without the sandbox")
        }
        // execve worked: /bin/true replaced the child before it could say "end".
        #expect(report["execve"] == nil && report["end"] == nil && report.exitCode == 0, "\(report)")
        if Self.isRoot {
            #expect(report["before-CapEff"] != "0000000000000000")
            #expect(report["setuid"] == "OK" && report["unshare-user"] == "OK")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("existing").path))
    }

    @Test("Landlock: after the seal no path opens (a file, a folder, /proc, /etc), from the sealing thread, a thread started before it (blocked meanwhile) or one started after; a descriptor opened before still reads", .disabled(if: Sanitizers.thread, "ThreadSanitizer's runtime cannot start under the sandbox"))
    func landlockSealsEveryThread() throws {
        try #require(AnalysisSandbox.landlockABI != nil, "this kernel has no Landlock: the seal cannot be checked here")
        let folder = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = try Self.run(Int32(SANDBOX_PROBE_LANDLOCK), in: folder)
        try #require(report["enter"] == "OK" && report["ll-seal"] == "OK", "\(report)")
        for probe in ["ll-open-read", "ll-open-folder", "ll-open-proc-status", "ll-open-etc-passwd", "ll-early-thread-open", "ll-late-thread-open"] {
            #expect(report[probe] == "EACCES", "\(probe): \(report[probe] ?? "no line")")
        }
        #expect(report["ll-opened-before-reads"] == "OK")
        #expect(report["ll-kill-self"] == "OK")
        #expect(report["end"] == "OK" && report.exitCode == 0, "\(report)")

        // The control: the same child without the seal opens all of them.
        let control = try Self.run(Int32(SANDBOX_PROBE_LANDLOCK_CONTROL), in: folder)
        for probe in ["ll-open-read", "ll-open-folder", "ll-open-proc-status", "ll-open-etc-passwd", "ll-early-thread-open", "ll-late-thread-open", "ll-stat"] {
            #expect(control[probe] == "OK", "\(probe) without the seal: \(control[probe] ?? "no line")")
        }
    }

    @Test("under a system call filter that refuses Landlock (a unit without its SystemCallFilter= line), the seal says Landlock is unavailable and why, and the worker goes on (files still open: nothing sealed)", .disabled(if: Sanitizers.thread, "ThreadSanitizer's runtime cannot start under the sandbox"))
    func landlockRefusedByAFilter() throws {
        let folder = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = try Self.run(Int32(SANDBOX_PROBE_LANDLOCK_REFUSED), in: folder)
        try #require(report["enter"] == "OK", "\(report)")
        #expect(report["ll-seal"] == "UNAVAILABLE", "\(report)")
        #expect(report["ll-reason"]?.contains("system call filter") == true, "\(report)")
        #expect(report["ll-open-read"] == "OK")
        #expect(report["end"] == "OK")
    }

    #if arch(x86_64)
    @Test("a system call under another convention (x32, i386 int 0x80) kills the worker with SIGSYS", .disabled(if: Sanitizers.thread, "ThreadSanitizer's runtime cannot start under the sandbox"), arguments: [
        Int32(SANDBOX_PROBE_X32_CALL), Int32(SANDBOX_PROBE_I386_CALL),
    ])
    func foreignConventionKills(mode: Int32) throws {
        let folder = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = try Self.run(mode, in: folder)
        try #require(report["enter"] == "OK", "entering failed: \(report)")
        #expect(report.signal == SIGSYS, "the child ended with status \(report.status): \(report)")
        #expect(report["x32-survived"] == nil && report["i386-survived"] == nil)
    }
    #endif
}
