import Foundation

/// The turn of a protected account's stream frames at its analysis worker: one frame at a time
/// for all the account's streams together, each begun at least ``spacing`` after the one
/// before, the streams served in the order they asked (a ticket queue). So streams never hold
/// more than one of the worker's analysis threads, and never more than `1 / spacing` judgements
/// a second: the files arriving in the account's folders (the intake) always find the others.
final class StreamFrameGate: @unchecked Sendable {
    /// The least time between the starts of two frames' judgements (8 a second).
    static let defaultSpacing: Duration = .milliseconds(125)

    let spacing: Duration
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var busy = false
    private var lastStart: ContinuousClock.Instant?
    private var waiting: [UInt64] = []
    private var nextTicket: UInt64 = 0
    private var enteredCount = 0

    /// Frames let through so far (tests, the log).
    var entered: Int {
        condition.lock()
        defer { condition.unlock() }
        return enteredCount
    }

    init(spacing: Duration = StreamFrameGate.defaultSpacing) {
        self.spacing = spacing
    }

    /// Waits for this frame's turn; false (without a turn) once `wanted` says no more (the
    /// stream was cancelled), looked at least every 50 ms. Call ``leave()`` after a true.
    func enter(while wanted: () -> Bool) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        nextTicket += 1
        let ticket = nextTicket
        waiting.append(ticket)
        defer { waiting.removeAll { $0 == ticket }; condition.broadcast() }
        while true {
            guard wanted() else { return false }
            let now = ContinuousClock.now
            var wait: Duration = .milliseconds(50)
            if !busy, waiting.first == ticket {
                let due = lastStart.map { $0 + spacing } ?? now
                if due <= now {
                    busy = true
                    lastStart = now
                    enteredCount += 1
                    return true
                }
                wait = min(wait, due - now)
            }
            let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
            _ = condition.wait(until: Date(timeIntervalSinceNow: max(0.001, seconds)))
        }
    }

    /// The frame's judgement ended: the next may go (after the spacing).
    func leave() {
        condition.lock()
        busy = false
        condition.broadcast()
        condition.unlock()
    }
}
