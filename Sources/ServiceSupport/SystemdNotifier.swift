#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Tells the service manager about the agent's state: the `sd_notify(3)`
/// protocol, spoken directly (no libsystemd).
///
/// systemd passes `NOTIFY_SOCKET` (a path, or `@name` for the abstract
/// namespace) to `Type=notify` services; each state is one datagram of
/// newline-separated `KEY=VALUE` lines sent to it over `AF_UNIX`/`SOCK_DGRAM`.
///
/// ```swift
/// let systemd = SystemdNotifier()          // nil outside systemd
/// systemd?.notify("READY=1\nSTATUS=Watching 2 folders")
/// if let ping = systemd?.watchdogPingInterval { /* send "WATCHDOG=1" every `ping` */ }
/// ```
public struct SystemdNotifier: Sendable {
    /// The socket address bytes for `sun_path`: a file path, or for the abstract
    /// namespace a leading NUL followed by the name (no terminator).
    private let address: [UInt8]
    /// `NOTIFY_SOCKET` as given.
    public let socketPath: String
    /// See `watchdogInterval`.
    public let watchdogInterval: Duration?

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from `environment`.
    ///
    /// Returns nil when `NOTIFY_SOCKET` is unset or empty, or names something that
    /// is neither an absolute path nor `@abstract` (e.g. systemd 254's `vsock:`
    /// addresses), or does not fit in `sun_path`: there is no one to tell then.
    public init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return nil }
        var bytes = Array(path.utf8)
        if bytes[0] == UInt8(ascii: "@") {
            guard bytes.count > 1 else { return nil }
            bytes[0] = 0                      // abstract namespace: leading NUL, no terminator
        } else {
            guard bytes[0] == UInt8(ascii: "/") else { return nil }
        }
        guard !bytes.dropFirst().contains(0),
              bytes.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else { return nil }
        address = bytes
        socketPath = path
        watchdogInterval = Self.parseWatchdog(environment: environment, pid: getpid())
    }

    /// The watchdog timeout the service manager enforces (`WatchdogSec=`, passed
    /// as `WATCHDOG_USEC`), or nil when there is none.
    ///
    /// Nil also when `WATCHDOG_PID` is set to a process other than this one
    /// (the variable was inherited by a child, which must not ping), or when
    /// `WATCHDOG_USEC` is not a positive integer. Send `"WATCHDOG=1"` at least
    /// every half of it: see `watchdogPingInterval`.
    static func parseWatchdog(environment: [String: String], pid: pid_t) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let pidText = environment["WATCHDOG_PID"], !pidText.isEmpty {
            guard let watchdogPID = pid_t(pidText), watchdogPID == pid else { return nil }
        }
        return .microseconds(Int64(clamping: usec))
    }

    /// How often to send `"WATCHDOG=1"`: half of `watchdogInterval`, as
    /// `sd_watchdog_enabled(3)` recommends. Nil when there is no watchdog.
    public var watchdogPingInterval: Duration? {
        watchdogInterval.map { $0 / 2 }
    }

    /// Sends one state datagram, e.g. `"READY=1\nSTATUS=Watching 2 folders"`,
    /// `"STOPPING=1"`, `"WATCHDOG=1"` or
    /// `"RELOADING=1\nMONOTONIC_USEC=\(SystemdNotifier.monotonicMicroseconds())"`.
    ///
    /// Returns true when the whole datagram was handed to the socket. Failure is
    /// not fatal for a service (systemd may have gone away) and sets `errno`.
    @discardableResult
    public func notify(_ state: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }

        var sa = sockaddr_un()
        sa.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &sa.sun_path) { raw in
            raw.copyBytes(from: address)
        }
        // Path sockets count their terminating NUL (sun_path was zeroed); abstract
        // names are exactly their bytes, a NUL included in the name would change it.
        let pathLength = address[0] == 0 ? address.count : address.count + 1
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + pathLength)

        let payload = Array(state.utf8)
        let sent = payload.withUnsafeBytes { buffer in
            withUnsafePointer(to: &sa) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), $0, length)
                }
            }
        }
        return sent == payload.count
    }

    /// `CLOCK_MONOTONIC` in microseconds, for `"RELOADING=1\nMONOTONIC_USEC=..."`
    /// (systemd ≥ 253 wants it with `RELOADING=1`; older versions ignore it).
    public static func monotonicMicroseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1_000
    }
}
