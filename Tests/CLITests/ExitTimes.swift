import Foundation

/// When processes exited, noted by their termination handlers (on Foundation's own thread):
/// a stop is timed to the exit itself, not to the next poll of a busy test.
final class ExitTimes: @unchecked Sendable {
    private let lock = NSLock()
    private var times: [Int32: Date] = [:]

    func note(_ pid: Int32) { lock.withLock { times[pid] = Date() } }

    func time(of pid: Int32) -> Date? { lock.withLock { times[pid] } }
}
