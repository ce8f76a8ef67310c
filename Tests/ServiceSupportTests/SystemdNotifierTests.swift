import Foundation
import Testing
@testable import ServiceSupport

/// sd_notify datagrams received on real AF_UNIX sockets, one bound to a path and
/// one in the abstract namespace, as systemd binds them.
@Suite("SystemdNotifier")
struct SystemdNotifierTests {
    /// A datagram socket bound to `name` (a path, or an abstract name without its NUL).
    final class Receiver {
        let fd: Int32
        let path: String?

        init(path: String? = nil, abstractName: String? = nil) throws {
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            self.path = path
            var sa = sockaddr_un()
            sa.sun_family = sa_family_t(AF_UNIX)
            let bytes: [UInt8] = path.map { Array($0.utf8) } ?? ([0] + Array(abstractName!.utf8))
            withUnsafeMutableBytes(of: &sa.sun_path) { $0.copyBytes(from: bytes) }
            let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (path == nil ? 0 : 1)
            let rc = withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
            }
            guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        func receive() -> String? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &buffer, buffer.count, 0)
            return n < 0 ? nil : String(decoding: buffer[..<n], as: UTF8.self)
        }

        deinit {
            close(fd)
            if let path { unlink(path) }
        }
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-sdnotify-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func nilWithoutNotifySocket() {
        #expect(SystemdNotifier(environment: [:]) == nil)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": ""]) == nil)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": "relative/path"]) == nil)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": "@"]) == nil)
    }

    @Test func sendsToAPathSocket() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("notify").path
        let receiver = try Receiver(path: path)
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": path]))
        #expect(notifier.notify("READY=1\nSTATUS=Watching 2 folders"))
        #expect(receiver.receive() == "READY=1\nSTATUS=Watching 2 folders")
        #expect(notifier.notify("STOPPING=1"))
        #expect(receiver.receive() == "STOPPING=1")
    }

    @Test func sendsToAnAbstractSocket() throws {
        let name = "quarantine-test-\(UUID().uuidString)"
        let receiver = try Receiver(abstractName: name)
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": "@" + name]))
        let reloading = "RELOADING=1\nMONOTONIC_USEC=\(SystemdNotifier.monotonicMicroseconds())"
        #expect(notifier.notify(reloading))
        #expect(receiver.receive() == reloading)
        #expect(notifier.notify("WATCHDOG=1"))
        #expect(receiver.receive() == "WATCHDOG=1")
    }

    @Test func notifyFailsWhenNobodyListens() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": directory.appendingPathComponent("gone").path]))
        #expect(!notifier.notify("READY=1"))
    }

    @Test func watchdogInterval() throws {
        let socket = ["NOTIFY_SOCKET": "/run/user/1000/systemd/notify"]
        let mine = try #require(SystemdNotifier(environment: socket.merging(["WATCHDOG_USEC": "30000000"]) { $1 }))
        #expect(mine.watchdogInterval == .seconds(30))
        #expect(mine.watchdogPingInterval == .seconds(15))

        let withPID = try #require(SystemdNotifier(environment: socket.merging(
            ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "\(getpid())"]) { $1 }))
        #expect(withPID.watchdogInterval == .seconds(30))

        // WATCHDOG_PID of another process: the variables were inherited, not meant for us.
        let other = try #require(SystemdNotifier(environment: socket.merging(
            ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "\(getppid())"]) { $1 }))
        #expect(other.watchdogInterval == nil)
        #expect(other.watchdogPingInterval == nil)

        for bad in ["0", "-5", "thirty", ""] {
            #expect(SystemdNotifier.parseWatchdog(environment: ["WATCHDOG_USEC": bad], pid: 42) == nil)
        }
        #expect(SystemdNotifier.parseWatchdog(environment: ["WATCHDOG_USEC": "500", "WATCHDOG_PID": "x"], pid: 42) == nil)
        #expect(SystemdNotifier.parseWatchdog(environment: ["WATCHDOG_USEC": "500", "WATCHDOG_PID": "42"], pid: 42) == .microseconds(500))
        #expect(SystemdNotifier(environment: socket)?.watchdogInterval == nil)
    }
}
