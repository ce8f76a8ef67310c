import Dispatch
import Locking

/// Whatever judges one frame of a live stream: ``SensitivityAnalyzer`` in this process (the test
/// card, both models, the policy and its decision rules), or a service's confined worker.
///
/// ``judge(_:policy:)`` is called on a ``VideoStreamAnalyzer``'s own threads and may block; it
/// must be safe to call from several threads at once.
public protocol VideoFrameJudge: Sendable {
    /// Judges `frame` by `policy`; throws when the frame cannot be judged (undecodable bytes, a
    /// worker that failed).
    func judge(_ frame: VideoStreamFrame, policy: SensitivityPolicy) throws -> VideoFrameVerdict
}

/// One frame's verdict.
public struct VideoFrameVerdict: Sendable, Equatable, Codable {
    public var isSensitive: Bool
    /// Why, e.g. `TEST_CARD 1.00` or `FEMALE_BREAST_EXPOSED 0.83` (empty when clean).
    public var reasons: [String]
    /// In the frame's own pixels.
    public var detections: [Detection]

    public init(isSensitive: Bool, reasons: [String] = [], detections: [Detection] = []) {
        self.isSensitive = isSensitive
        self.reasons = reasons
        self.detections = detections
    }
}

/// How a judge that hands each frame to asynchronous work (a service's worker) waits for it on
/// the analyzer's own thread, which is never one of Swift's cooperative threads: each
/// ``run(_:)`` starts the work as a task and blocks until it ends; ``cancel()`` cancels every
/// task under way and refuses the later ones. Safe to use from several threads at once.
public final class FrameJudgementWaits: Sendable {
    /// Why a frame was not judged: the stream was cancelled.
    public struct Cancelled: Error, CustomStringConvertible {
        public init() {}
        public var description: String { "the stream was cancelled" }
    }

    private struct State {
        var cancelled = false
        var serial: UInt64 = 0
        var running: [UInt64: Task<Void, Never>] = [:]
    }

    private let state = Locked(State())

    public init() {}

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Runs `work` and waits for its outcome; nil (the work not started) once cancelled.
    public func run<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) -> Result<T, Error>? {
        let outcome = Locked<Result<T, Error>>(.failure(Cancelled()))
        let done = DispatchSemaphore(value: 0)
        let started = state.withLock { s -> UInt64? in
            guard !s.cancelled else { return nil }
            s.serial += 1
            s.running[s.serial] = Task {
                let result: Result<T, Error>
                do { result = .success(try await work()) } catch { result = .failure(error) }
                outcome.withLock { $0 = result }
                done.signal()
            }
            return s.serial
        }
        guard let serial = started else { return nil }
        done.wait()
        state.withLock { _ = $0.running.removeValue(forKey: serial) }
        return outcome.withLock { $0 }
    }

    /// Cancels the work under way and refuses every later ``run(_:)``. Idempotent.
    public func cancel() {
        let running = state.withLock { s -> [Task<Void, Never>] in
            s.cancelled = true
            return Array(s.running.values)
        }
        for task in running { task.cancel() }
    }
}
