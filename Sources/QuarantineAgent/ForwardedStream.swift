#if canImport(Glibc)
import Glibc
#endif
import CSystemShims
import Foundation
import GuardianAPI
import Locking
import MediaDecoding
import SensitivityAnalysis
import ServiceSupport

/// One live stream on a protected account's session bus (a `BeginStream` object of
/// ``GuardedAnalysisBus``), judged by the guardian service over a connection of its own (the
/// verb `stream`): the forwarder only carries frames and changes, the service decides the policy
/// and judges with the account's own worker.
///
/// The application's frames are taken at the call (an encoded picture's bytes, or a raw frame,
/// read from its memfd at once as the agent reads them) into one slot; a sender thread sends the
/// newest to the service as a picture file in a memfd of its own (a raw frame first made a BMP at
/// analysis size, ``WorkerFrameJudge/pictureFile(_:)``, as the agent's worker gets it). A frame
/// that arrives while one waits in the slot pushes it out (dropped here, counted): the bus thread
/// never waits for the service. A receiver thread turns the service's messages into the
/// object's properties and `AnalysisChanged` signals. If the service ends the stream or cannot
/// be reached under the `descriptive` policy, the application is told to intervene (a stream
/// that cannot be judged counts as sensitive, as the rule does with a frame).
final class ForwardedStream: Sendable {
    /// Something to send to the service, in the order the sender takes them.
    enum Pending: Sendable {
        case encoded([UInt8])
        case raw(RawVideoFrame)
    }

    /// The whole advice (`AnalysisChanged`'s three arguments).
    struct Advice: Sendable, Equatable {
        var indicate = false, interrupt = false, mute = false
    }

    private struct State {
        var frame: Pending?
        var continueWanted = 0
        var endWanted = false
        var closed = false
        /// The service's last message was final (ended or failed), or the connection is gone.
        var over = false
        var seen = 0
        var droppedHere = 0
        var service = GuardianWire.LiveStream.Counts()
        var advice = Advice()
        var ended: [@Sendable () -> Void] = []
        var pipe: RawFramePipe?
    }

    let path: String
    /// The caller's unique bus name: the only one who sees the object.
    let owner: String
    let participant: String
    let direction: VideoStreamAnalyzer.StreamDirection
    /// What the service said it judges by.
    let policy: AnalysisPolicy
    private let client: GuardianClient
    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    /// Sends each change of advice (properties first, then the signal).
    private let emit: @Sendable (Advice) -> Void

    /// A stream the service began on `client` under `policy`; starts its threads.
    init(path: String, owner: String, participant: String, direction: VideoStreamAnalyzer.StreamDirection, policy: AnalysisPolicy,
         client: GuardianClient, emit: @escaping @Sendable (Advice) -> Void) {
        self.path = path
        self.owner = owner
        self.participant = participant
        self.direction = direction
        self.policy = policy
        self.client = client
        self.emit = emit
        let sender = Thread { [self] in sendLoop() }
        sender.name = "stream-send"
        sender.stackSize = 1 << 19
        sender.start()
        let receiver = Thread { [self] in receiveLoop() }
        receiver.name = "stream-receive"
        receiver.stackSize = 1 << 18
        receiver.start()
    }

    // MARK: - The application's side

    /// Takes a frame; returns at once. The one waiting, if any, is dropped for it.
    func submit(_ frame: Pending) {
        let taken = state.withLock { s -> Bool in
            guard !s.closed, !s.endWanted else { return false }
            if s.frame != nil { s.droppedHere += 1 }
            s.frame = frame
            s.seen += 1
            return true
        }
        if taken { wake.signal() }
    }

    /// `ContinueStream`: told to the service (after the frames already sent).
    func continueStream() {
        state.withLock { $0.continueWanted += 1 }
        wake.signal()
    }

    /// `End`: the frame waiting is sent, the service judges it and sends the last changes;
    /// `done` runs once it said the stream ended (or the connection is gone).
    func end(_ done: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            if s.over || s.closed { return true }
            s.endWanted = true
            s.ended.append(done)
            return false
        }
        if let pipe = state.withLock({ $0.pipe }) { pipe.stop(wait: false) }
        if now { return done() }
        wake.signal()
    }

    /// The caller left (or the forwarder stops): the connection is shut, which ends the stream
    /// in the service at once. Idempotent.
    func cancel() {
        let (pipe, waiting) = state.withLock { s -> (RawFramePipe?, [@Sendable () -> Void]) in
            s.closed = true
            defer { s.ended = [] }
            return (s.pipe, s.ended)
        }
        pipe?.stop(wait: false)
        client.cancel()
        wake.signal()
        waiting.forEach { $0() }
    }

    /// Reads `pipe` for this stream; false when one is read already or the stream is ending.
    func attach(_ new: RawFramePipe) -> Bool {
        state.withLock { s in
            guard s.pipe == nil, !s.closed, !s.endWanted, !s.over else { return false }
            s.pipe = new
            return true
        }
    }

    /// The pipe's reading ended.
    func detach(_ ended: RawFramePipe) {
        state.withLock { if $0.pipe === ended { $0.pipe = nil } }
    }

    /// The object's properties (interface `...Analysis1.Stream`), as the agent's streams have them.
    var properties: [(String, DBusValue)] {
        let s = state.withLock { $0 }
        return [
            ("Participant", .string(participant)), ("Direction", .string(direction.rawValue)),
            ("AnalysisPolicy", .string(policy.rawValue)),
            ("ShouldIndicateSensitivity", .boolean(s.advice.indicate)),
            ("ShouldInterruptVideo", .boolean(s.advice.interrupt)),
            ("ShouldMuteAudio", .boolean(s.advice.mute)),
            ("FramesSeen", .uint64(UInt64(s.seen))), ("FramesJudged", .uint64(UInt64(s.service.judged))),
            ("FramesDropped", .uint64(UInt64(s.droppedHere + s.service.dropped))), ("FramesFailed", .uint64(UInt64(s.service.failed))),
        ]
    }

    // MARK: - Threads

    /// Sends what the application gave, newest frame only, until the end or the cancel.
    private func sendLoop() {
        while true {
            wake.wait()
            while true {
                let (frame, continues, end, closed) = state.withLock { s -> (Pending?, Int, Bool, Bool) in
                    defer { s.frame = nil; s.continueWanted = 0 }
                    return (s.frame, s.continueWanted, s.endWanted, s.closed || s.over)
                }
                if closed { return }
                if let frame, !send(frame) { return stopped(becauseOf: "the guardian service did not take a frame") }
                for _ in 0..<continues {
                    guard (try? client.sendStreamStep(.continueStream)) != nil else {
                        return stopped(becauseOf: "the guardian service did not take a ContinueStream")
                    }
                }
                if frame == nil && continues == 0 {
                    if end {
                        try? client.sendStreamStep(.end)
                        return
                    }
                    break
                }
            }
        }
    }

    /// Sends one frame as a picture file in a memfd; false when the service did not take it.
    private func send(_ frame: Pending) -> Bool {
        let bytes: [UInt8]
        switch frame {
        case .encoded(let encoded): bytes = encoded
        case .raw(let raw):
            // A frame that cannot be made a picture is dropped (counted: the service never saw it).
            guard let picture = try? WorkerFrameJudge.pictureFile(VideoStreamFrame(.raw(raw))) else {
                state.withLock { $0.droppedHere += 1 }
                return true
            }
            bytes = picture
        }
        guard case .success(let fd) = MemoryFile.holding(bytes, name: "quarantine-forwarded-frame") else { return true }
        defer { close(fd) }
        return (try? client.sendStreamStep(.frame, frame: fd)) != nil
    }

    /// Reads the service's changes and counts until its last message or the connection's end.
    private func receiveLoop() {
        while true {
            guard let answer = client.streamAnswer() else { return stopped(becauseOf: "the guardian service's connection ended") }
            guard let body = answer.answer else { return stopped(becauseOf: "the guardian service refused the stream") }
            if let counts = body.counts ?? body.ended { state.withLock { $0.service = counts } }
            if let change = body.change {
                let advice = Advice(indicate: change.shouldIndicateSensitivity, interrupt: change.shouldInterruptVideo, mute: change.shouldMuteAudio)
                let emitted = state.withLock { s -> Bool in
                    guard !s.closed else { return false }
                    s.advice = advice
                    return true
                }
                if emitted { emit(advice) }
            }
            if body.ended != nil {
                let waiting = state.withLock { s -> [@Sendable () -> Void] in
                    s.over = true
                    defer { s.ended = [] }
                    return s.ended
                }
                wake.signal()
                waiting.forEach { $0() }
                client.cancel()
                return
            }
            if body.failure != nil { return stopped(becauseOf: body.failure!.message) }
        }
    }

    /// The stream ended without an `End` (the service ended it, or the connection broke): under
    /// `descriptive`, the application is told to intervene; whoever waits for the end is told.
    private func stopped(becauseOf reason: String) {
        let (waiting, advise) = state.withLock { s -> ([@Sendable () -> Void], Bool) in
            let first = !s.over
            s.over = true
            defer { s.ended = [] }
            let advise = first && !s.closed && !s.endWanted && policy == .descriptiveInterventions && s.advice != Advice(indicate: true, interrupt: true, mute: true)
            if advise { s.advice = Advice(indicate: true, interrupt: true, mute: true) }
            return (s.ended, advise)
        }
        if advise { emit(Advice(indicate: true, interrupt: true, mute: true)) }
        client.cancel()
        wake.signal()
        waiting.forEach { $0() }
    }
}
