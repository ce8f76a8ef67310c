import Foundation
import Locking
import PathBytes
import Testing
import TestSupport
@testable import AccountPipeline

/// A mount table longer than a page (a desktop with snaps or containers has one): the medium
/// mounted last is listed last, and Foundation's readers stop after a /proc file's first 4 KiB.
/// The mounts are made by a child in a mount namespace of its own (`unshare -m`), so nothing else
/// on the machine sees them; the table read is the child's (`/proc/<pid>/mountinfo`).
// (.ownThread: the test waits for the child and the watcher synchronously.)
@Suite("A long mount table", .enabled(if: getuid() == 0, "mounting needs root"), .ownThread)
struct LongMountTableTests {
    /// A shell in its own mount namespace that mounts `count` tmpfs under `folder`, says "ready",
    /// then on each line it reads mounts one more (the line is its name) and says "mounted".
    final class Namespace {
        let process = Process()
        let input = Pipe()
        let output = Pipe()

        init(folder: String, count: Int) throws {
            let script = """
                set -e
                for i in $(seq 1 \(count)); do mkdir -p "$1/filler-$i"; mount -t tmpfs -o size=64k filler "$1/filler-$i"; done
                echo ready
                while read -r name; do mkdir -p "$1/$name"; mount -t tmpfs -o size=64k stick "$1/$name"; echo mounted; done
                """
            process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
            process.arguments = ["--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", folder]
            process.standardInput = input
            process.standardOutput = output
            try process.run()
        }

        var mountinfo: String { "/proc/\(process.processIdentifier)/mountinfo" }

        func line() -> String? {
            var bytes: [UInt8] = []
            while true {
                guard let byte = try? output.fileHandleForReading.read(upToCount: 1), let first = byte.first else { return nil }
                if first == 10 { return String(decoding: bytes, as: UTF8.self) }
                bytes.append(first)
            }
        }

        func mount(_ name: String) { input.fileHandleForWriting.write(Data((name + "\n").utf8)) }

        func end() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    @Test("read whole, past the first page: the medium mounted last is in the table, and the watcher reports it")
    func longTable() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("long-mounts-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let namespace = try Namespace(folder: folder, count: 80)
        defer { namespace.end() }
        #expect(namespace.line() == "ready")
        let size = PathBytes.wholeFile(namespace.mountinfo)?.count ?? 0
        #expect(size > 2 * 4096, "the table is only \(size) bytes: not long enough to test this")
        let table = try #require(MountTable.current(path: namespace.mountinfo))
        #expect(table.mountPoints(below: [folder]).count == 80, "\(table.mountPoints(below: [folder]).count) of 80 mounts read")
        let lastRead = table.isMountPoint("\(folder)/filler-80")
        #expect(lastRead, "the last mount, past the first page, is missing")

        // The watcher (POLLPRI on the child's table): a medium mounted after them all is reported.
        let seen = Locked<[String]>([])
        let changed = DispatchSemaphore(value: 0)
        let watcher = try MountWatcher(path: namespace.mountinfo, initial: table) { table in
            seen.withLock { $0 = table.mountPoints(below: [folder]) }
            changed.signal()
        }
        watcher.start()
        defer { watcher.stop() }
        namespace.mount("STICK")
        #expect(namespace.line() == "mounted")
        var reported = false
        let until = DispatchTime.now() + 5
        while !reported, changed.wait(timeout: until) == .success {
            reported = seen.withLock { $0.contains("\(folder)/STICK") }
        }
        #expect(reported, "the stick mounted after 80 others was not reported: \(seen.withLock { $0.count }) mounts seen")
    }
}
