import Foundation
import Locking
import SensitivityAnalysis
import ServiceSupport

/// One `AnalyzeVideo` call: an object on the bus with its `State`, `Progress` and `Result`
/// properties, `Progress`, `Finished` and `Failed` signals (sent to its caller alone) and `Cancel`.
/// Each change of a property is also sent as `org.freedesktop.DBus.Properties.PropertiesChanged`
/// (to the caller alone; `Progress` at the pace of the `Progress` signal).
final class BusVideoJob: Sendable {
    enum Phase: String, Sendable { case running, finished, failed, cancelled }

    /// What `Finished` and the `Result` property carry.
    struct Verdict: Sendable {
        var sensitive: Bool
        /// Media time of the first flagged frame, seconds; -1 when none.
        var flaggedTime: Double
        var flaggedRanges: [ClosedRange<Double>]
        var reasons: [String]
    }

    private struct State {
        var phase = Phase.running
        var progress = VideoProgress(fraction: nil)
        var verdict: Verdict?
        var lastSignal: ContinuousClock.Instant?
        var task: Task<Void, Never>?
    }

    let path: String
    /// The caller's unique name: the only one that sees the job.
    let owner: String
    private let state = Locked(State())
    private let emit: @Sendable (_ member: String, _ values: [DBusValue]) -> Void
    private let changed: @Sendable (_ properties: [(String, DBusValue)]) -> Void
    /// Progress signals are sent at most this often (the property is always current).
    static let signalInterval = Duration.milliseconds(250)

    /// `emit` sends one of the job's signals; `changed`, `PropertiesChanged` with these properties.
    init(path: String, owner: String, emit: @escaping @Sendable (String, [DBusValue]) -> Void,
         changed: @escaping @Sendable ([(String, DBusValue)]) -> Void = { _ in }) {
        self.path = path
        self.owner = owner
        self.emit = emit
        self.changed = changed
    }

    var phase: Phase { state.withLock { $0.phase } }

    /// Keeps the task that runs the analysis, for ``cancel()``.
    func attach(_ task: Task<Void, Never>) {
        let cancelled = state.withLock { s -> Bool in
            s.task = task
            return s.phase == .cancelled
        }
        if cancelled { task.cancel() }
    }

    /// Stops the analysis; `Failed("cancelled", ...)` follows. Idempotent; no effect once over.
    func cancel(reason: String = "cancelled by the caller") {
        let task = state.withLock { s -> Task<Void, Never>? in
            guard s.phase == .running else { return nil }
            s.phase = .cancelled
            return s.task
        }
        guard let task else { return }
        task.cancel()
        changed([("State", .string(Phase.cancelled.rawValue))])
        emit("Failed", [.string("cancelled"), .string(reason)])
    }

    func progressed(_ progress: VideoProgress) {
        let send = state.withLock { s -> Bool in
            guard s.phase == .running else { return false }
            s.progress = progress
            let now = ContinuousClock.now
            if let last = s.lastSignal, now - last < Self.signalInterval { return false }
            s.lastSignal = now
            return true
        }
        guard send else { return }
        changed([("Progress", .structure(Self.progressValues(progress)))])
        emit("Progress", Self.progressValues(progress))
    }

    func finished(_ verdict: Verdict) {
        let progress = state.withLock { s -> VideoProgress? in
            guard s.phase == .running else { return nil }
            s.phase = .finished
            s.verdict = verdict
            s.progress.fraction = 1
            return s.progress
        }
        guard let progress else { return }
        changed([("State", .string(Phase.finished.rawValue)), ("Progress", .structure(Self.progressValues(progress))),
                 ("Result", .structure(Self.verdictValues(verdict)))])
        emit("Progress", Self.progressValues(progress))
        emit("Finished", Self.verdictValues(verdict))
    }

    func failed(code: String, message: String) {
        let first = state.withLock { s -> Bool in
            guard s.phase == .running else { return false }
            s.phase = .failed
            return true
        }
        guard first else { return }
        changed([("State", .string(Phase.failed.rawValue))])
        emit("Failed", [.string(code), .string(message)])
    }

    /// The object's properties by name.
    var properties: [(String, DBusValue)] {
        state.withLock { s in
            let verdict = s.verdict ?? Verdict(sensitive: false, flaggedTime: -1, flaggedRanges: [], reasons: [])
            return [
                ("State", .string(s.phase.rawValue)),
                ("Progress", .structure(Self.progressValues(s.progress))),
                ("Result", .structure(Self.verdictValues(verdict))),
            ]
        }
    }

    static func progressValues(_ progress: VideoProgress) -> [DBusValue] {
        [.double(progress.fraction ?? -1), ranges(progress.covered.ranges), .double(progress.mediaTime)]
    }

    static func verdictValues(_ verdict: Verdict) -> [DBusValue] {
        [.boolean(verdict.sensitive), .double(verdict.flaggedTime), ranges(verdict.flaggedRanges), .stringArray(verdict.reasons)]
    }

    static func ranges(_ ranges: [ClosedRange<Double>]) -> DBusValue {
        .array(elementSignature: "(dd)", ranges.map { .structure([.double($0.lowerBound), .double($0.upperBound)]) })
    }
}
