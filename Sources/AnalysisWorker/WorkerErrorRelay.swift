import Foundation
import Locking

/// What a worker writes to its standard error, relayed into the service's log line by line with
/// the worker's pid in front (at most ``WorkerConnection/maxErrorBytes``), and its last lines
/// kept (bounded) for when it dies of a signal: a crash then explains itself in the journal even
/// when its report came after the cap, or among lines nobody reads (``lastLines(waitingUpTo:)``).
final class WorkerErrorRelay: Sendable {
    /// The most lines kept, and the most bytes in them (each line cut to ``maxLineBytes``).
    static let maxTailLines = 40
    static let maxTailBytes = 6 << 10
    static let maxLineBytes = 512

    let pid: pid_t
    private struct State {
        var written = 0
        var tail: [String] = []
        var tailBytes = 0
        var ended = false
    }
    private let state = Locked(State())
    private let end = DispatchSemaphore(value: 0)

    init(pid: pid_t) { self.pid = pid }

    /// Starts the relay from `descriptor` (the read end of the worker's standard error) on a
    /// thread of its own; it closes the descriptor when the pipe ends.
    @discardableResult
    static func start(from descriptor: Int32, pid: pid_t) -> WorkerErrorRelay {
        let relay = WorkerErrorRelay(pid: pid)
        let thread = Thread { relay.run(from: descriptor) }
        thread.name = "worker-\(pid)-errors"
        thread.start()
        return relay
    }

    /// Copies lines until the pipe ends; then closes it.
    func run(from descriptor: Int32) {
        defer {
            close(descriptor)
            state.withLock { $0.ended = true }
            end.signal()
        }
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            pending += chunk[0..<count]
            while let newline = pending.firstIndex(of: 10) {
                emit(pending[..<newline])
                pending.removeSubrange(...newline)
            }
            if pending.count > 1024 { emit(pending[...]); pending.removeAll() }
        }
        if !pending.isEmpty { emit(pending[...]) }
    }

    /// One line: into the log (within the cap, the libraries' expected noise left out), and
    /// into the tail.
    func emit(_ line: ArraySlice<UInt8>) {
        let whole = String(decoding: line, as: UTF8.self)
        if WorkerConnection.expectedNoise.contains(where: { whole.hasSuffix($0) }) { return }
        let text = Self.tame(String(decoding: line.prefix(1024), as: UTF8.self))
        let kept = Self.tame(String(decoding: line.prefix(Self.maxLineBytes), as: UTF8.self))
        let out = state.withLock { s -> String? in
            s.tail.append(kept)
            s.tailBytes += kept.utf8.count
            while s.tail.count > Self.maxTailLines || s.tailBytes > Self.maxTailBytes {
                s.tailBytes -= s.tail.removeFirst().utf8.count
            }
            guard s.written < WorkerConnection.maxErrorBytes else { return nil }
            var out = "analysis worker \(pid): \(text)\n"
            s.written += out.utf8.count
            if s.written >= WorkerConnection.maxErrorBytes {
                out += "analysis worker \(pid): (more dropped: over \(WorkerConnection.maxErrorBytes) bytes)\n"
            }
            return out
        }
        if let out { FileHandle.standardError.write(Data(out.utf8)) }
    }

    /// A line as the service may log it: no control characters (no line a worker writes can
    /// pass for one of the service's own, or move a terminal's cursor).
    static func tame(_ line: String) -> String {
        String(String.UnicodeScalarView(line.unicodeScalars.map {
            $0.properties.generalCategory == .control || $0 == "\u{2028}" || $0 == "\u{2029}" ? " " : $0
        }))
    }

    /// The last lines the worker wrote (at most ``maxTailLines``, ``maxTailBytes``), once its
    /// standard error has ended or `timeout` has passed (a process it cloned could hold the pipe).
    func lastLines(waitingUpTo timeout: Duration = .seconds(1)) -> [String] {
        if !state.withLock({ $0.ended }) {
            let (seconds, attoseconds) = timeout.components
            _ = end.wait(timeout: .now() + .seconds(Int(seconds)) + .nanoseconds(Int(attoseconds / 1_000_000_000)))
            end.signal()
        }
        return state.withLock { $0.tail }
    }

    /// Writes to the service's log that the worker died of a signal (`how`), with the last
    /// lines it wrote (a crash report, a runtime's message), or that it wrote none.
    func reportDeath(_ how: String) {
        let lines = lastLines()
        var text = "analysis worker \(pid): \(how); "
        if lines.isEmpty {
            text += "it wrote nothing to its standard error\n"
        } else {
            text += "the last \(lines.count) line(s) it wrote:\n" + lines.map { "analysis worker \(pid): | \($0)\n" }.joined()
        }
        FileHandle.standardError.write(Data(text.utf8))
    }
}
