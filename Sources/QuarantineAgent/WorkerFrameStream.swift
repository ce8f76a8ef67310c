#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Locking

/// A live stream judged frame by frame through the agent's analysis (the same confined worker
/// as every file), one frame at a time, keeping at most ``pendingLimit`` frames waiting: when
/// frames come faster than they are judged, the oldest waiting one is dropped and counted.
///
/// After a flagged frame the stream tells the application (``StreamIntervention``) and pauses,
/// as `SCVideoStreamAnalyzer` does, until `ContinueStream`: frames meanwhile are skipped. After
/// it, the first clean frame clears the intervention; a flagged one signals it again.
final class WorkerFrameStream: LiveStreamAnalysis, @unchecked Sendable {
    /// Frames kept waiting while one is judged.
    static let pendingLimit = 2

    /// Judges one frame: true flagged, false clean, nil when it could not be judged.
    typealias Judge = @Sendable (_ descriptor: Int32, _ serial: UInt64) async -> (flagged: Bool, policy: AnalysisBus.Policy)?

    private struct State {
        var pending: [Int32] = []
        var judging = false
        var paused = false
        var ended = false
        var serial: UInt64 = 0
        var snapshot = LiveStreamSnapshot()
        var task: Task<Void, Never>?
    }

    private let state = Locked(State())
    private let judge: Judge
    private let changed: @Sendable (StreamIntervention) -> Void

    init(judge: @escaping Judge, changed: @escaping @Sendable (StreamIntervention) -> Void) {
        self.judge = judge
        self.changed = changed
    }

    deinit { end() }

    var snapshot: LiveStreamSnapshot { state.withLock { $0.snapshot } }

    func submit(frame descriptor: Int32) {
        var toClose: [Int32] = []
        state.withLock { s in
            if s.ended { toClose.append(descriptor); return }
            if s.paused {
                s.snapshot.skipped += 1
                toClose.append(descriptor)
                return
            }
            s.pending.append(descriptor)
            while s.pending.count > Self.pendingLimit {
                toClose.append(s.pending.removeFirst())
                s.snapshot.dropped += 1
            }
            if !s.judging {
                s.judging = true
                s.task = Task { [self] in await self.judgeWaiting() }
            }
        }
        for fd in toClose { close(fd) }
    }

    func continueStream() {
        state.withLock { $0.paused = false }
    }

    func end() {
        let (pending, task) = state.withLock { s -> ([Int32], Task<Void, Never>?) in
            s.ended = true
            defer { s.pending = []; s.task = nil }
            return (s.pending, s.task)
        }
        task?.cancel()
        for fd in pending { close(fd) }
    }

    /// Judges waiting frames, newest kept, until none waits.
    private func judgeWaiting() async {
        while let frame = next() {
            let (descriptor, serial) = frame
            let verdict = await judge(descriptor, serial)
            close(descriptor)
            guard let verdict else { continue }
            let change = state.withLock { s -> StreamIntervention? in
                guard !s.ended else { return nil }
                s.snapshot.judged += 1
                if verdict.flagged {
                    // Frames that waited behind the flagged one are not judged while paused.
                    s.paused = true
                    s.snapshot.skipped += UInt64(s.pending.count)
                    let waiting = s.pending
                    s.pending = []
                    for fd in waiting { close(fd) }
                    s.snapshot.intervention = .forFlaggedFrame(policy: verdict.policy)
                    return s.snapshot.intervention
                }
                guard s.snapshot.intervention != .none else { return nil }
                s.snapshot.intervention = .none
                return StreamIntervention.none
            }
            if let change { changed(change) }
        }
    }

    private func next() -> (Int32, UInt64)? {
        state.withLock { s in
            guard !s.ended, !Task.isCancelled, !s.pending.isEmpty else {
                s.judging = false
                return nil
            }
            s.serial += 1
            return (s.pending.removeFirst(), s.serial)
        }
    }
}
