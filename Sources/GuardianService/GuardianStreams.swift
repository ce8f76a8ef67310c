#if canImport(Glibc)
import Glibc
#endif
import AccountPipeline
import Foundation
import GuardianAPI
import Locking
import Logging
import QuarantineCore
import SensitivityAnalysis
import ServiceSupport

/// The guardian service's `stream` verb: the live streams of the protected account's
/// applications (the session forwarder's `BeginStream`), each judged frame by frame with the
/// account's own sandboxed worker under the policy the service decides from the mode in force
/// (``VideoStreamAnalyzer`` with the one rule, ``StreamInterventions``: `descriptive` in child
/// mode). The child chooses nothing but its frames.
///
/// What a hostile child can cost is bounded:
/// - at most ``GuardianWire/LiveStream/Limits/streamsPerAccount`` streams at once (a third is
///   refused), each one connection (counted in the account's connections) and one thread;
/// - frames are read at most ``maxFramesRead`` a second per stream, each at most
///   ``GuardianWire/LiveStream/Limits/maxFrameBytes``, checked as the `analyze` verb checks (open for
///   reading, a regular file) before a byte is read; a frame waits in one slot, a newer one
///   pushes it out (dropped, counted): nothing queues;
/// - judgements go through one ``StreamFrameGate`` for the account: one frame at a time, at
///   most 8 a second, so the streams never hold more than one of the worker's threads and the
///   account's arriving files are judged beside them;
/// - a client that closes its connection (or does not take its answers within
///   ``sendTimeout``) has its stream cancelled at once.
final class GuardianStreams: Sendable {
    /// The engine and settings in force, asked at each stream's beginning (the agent's).
    typealias Provider = GuardianAnalysis.Provider

    /// Frame messages read a second per stream at most (the rest wait in the socket, and the
    /// forwarder drops the oldest of its own).
    static let maxFramesRead = 30
    /// How long one answer may wait for the client to make room for it.
    static let sendTimeout: Duration = .seconds(1)
    /// How often the reading thread looks whether the service stops while the client is quiet.
    static let pollInterval: Int32 = 100

    private struct State {
        var open: [UInt64: VideoStreamAnalyzer] = [:]
        var next: UInt64 = 0
        var stopped = false
        var began = 0
    }

    let maxStreams: Int
    let gate: StreamFrameGate
    private let provider: Provider
    private let logger: Logger
    private let state = Locked(State())

    init(maxStreams: Int = GuardianWire.LiveStream.Limits.streamsPerAccount, gate: StreamFrameGate = StreamFrameGate(),
         logger: Logger, provider: @escaping Provider) {
        self.maxStreams = maxStreams
        self.gate = gate
        self.logger = logger
        self.provider = provider
    }

    /// Streams open now.
    var openCount: Int { state.withLock { $0.open.count } }

    /// Ends every stream (the service stops): their threads close their connections.
    func stop() {
        let streams = state.withLock { s -> [VideoStreamAnalyzer] in
            s.stopped = true
            return Array(s.open.values)
        }
        streams.forEach { $0.cancel() }
    }

    /// Opens the stream asked by `request` (a ``GuardianWire/LiveStream/Step/begin``) on `socket`,
    /// served on a thread of its own until it ends; `done` is called once after the last
    /// answer, to close the connection.
    func start(_ request: GuardianWire.LiveStream, socket: LocalSocket, done: @escaping @Sendable () -> Void) {
        try? socket.setTimeouts(receive: .seconds(2), send: Self.sendTimeout)
        let (engine, settings, problem) = provider()
        guard let engine else {
            Self.send(.init(failure: .init(.unavailable, code: "unavailable", "the guardian service cannot analyse now: \(problem ?? "its analysis is starting")")),
                      mode: settings.mode, on: socket)
            return done()
        }
        let policy = AnalysisPolicy(mode: settings.mode)
        let judge = GuardianFrameJudge(engine: engine, settings: settings, gate: gate)
        let participant = String((request.participant ?? "").prefix(GuardianWire.LiveStream.Limits.maxParticipant))
        let analyzer = VideoStreamAnalyzer(participantUUID: participant, streamDirection: request.direction ?? .incoming, judge: judge,
                                           policy: settings.policy, analysisPolicy: policy)
        let id = state.withLock { s -> UInt64? in
            guard !s.stopped, s.open.count < maxStreams else { return nil }
            s.next += 1
            s.open[s.next] = analyzer
            s.began += 1
            return s.next
        }
        guard let id else {
            analyzer.cancel()
            Self.send(.init(failure: .init(.limitsExceeded, code: "busy", "\(maxStreams) streams of this account are open already: end one first")),
                      mode: settings.mode, on: socket)
            return done()
        }
        let logger = logger
        let thread = Thread { [self] in
            defer {
                judge.cancel()
                analyzer.cancel()
                state.withLock { _ = $0.open.removeValue(forKey: id) }
                done()
            }
            guard Self.send(.init(began: policy), mode: settings.mode, on: socket) else { return }
            logger.info("an application's stream began (\(policy.rawValue)); \(openCount) open")
            let ending = serve(id, analyzer, judge: judge, socket: socket, mode: settings.mode)
            let counts = Self.counts(analyzer)
            logger.info("an application's stream ended (\(ending)): \(counts.seen) frame(s) taken, \(counts.judged) judged, \(counts.dropped) dropped")
        }
        thread.name = "guardian-stream"
        thread.stackSize = 1 << 19
        thread.start()
    }

    /// Reads the client's messages until the stream ends; sends the changes and the counts as
    /// they come. Returns why it ended.
    private func serve(_ id: UInt64, _ analyzer: VideoStreamAnalyzer, judge: GuardianFrameJudge, socket: LocalSocket, mode: AnalysisMode) -> String {
        let broken = Locked(false)
        let forwarding = Task.detached {
            for await change in analyzer.analysisChanges {
                let wire = GuardianWire.LiveStream.Change(shouldIndicateSensitivity: change.shouldIndicateSensitivity, shouldInterruptVideo: change.shouldInterruptVideo,
                                                      shouldMuteAudio: change.shouldMuteAudio, cause: change.cause.rawValue, reasons: change.reasons)
                if !Self.send(.init(change: wire, counts: Self.counts(analyzer)), mode: mode, on: socket) { broken.withLock { $0 = true } }
            }
        }
        // Nothing is sent after this returns (the connection is closed then, and its number may
        // be another's soon after): the forwarding is waited for.
        defer {
            forwarding.cancel()
            let finished = DispatchSemaphore(value: 0)
            Task.detached { await forwarding.value; finished.signal() }
            finished.wait()
        }
        var lastCounts = GuardianWire.LiveStream.Counts()
        var lastCountsSent = ContinuousClock.now
        var lastFrame: ContinuousClock.Instant?
        let frameSpacing = Duration.seconds(1) / Self.maxFramesRead
        while true {
            if state.withLock({ $0.stopped }) { return "the service stops" }
            if broken.withLock({ $0 }) { return "the client did not take its answers" }
            if ContinuousClock.now - lastCountsSent >= GuardianWire.LiveStream.Limits.countsInterval {
                let counts = Self.counts(analyzer)
                if counts != lastCounts {
                    guard Self.send(.init(counts: counts), mode: mode, on: socket) else { return "the client did not take its answers" }
                    lastCounts = counts
                }
                lastCountsSent = .now
            }
            var poller = pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Self.pollInterval)
            if ready < 0 && errno != EINTR { return "poll failed" }
            guard ready > 0 else { continue }
            let message: LocalSocket.Message?
            do { message = try socket.receive(maxLength: GuardianProtocol.maxRequest) } catch {
                return fail(id, .init(.invalidDescriptor, code: "bad_message", "a message over \(GuardianProtocol.maxRequest) bytes or with too many descriptors: the stream ends"), socket, mode)
            }
            // The client closed the connection: the stream ends at once, judged no further.
            guard let message else { return "the client left" }
            let request: GuardianWire.LiveStream
            do throws(GuardianProtocolError) {
                guard try GuardianProtocol.verb(of: message.bytes) == .stream else { throw .notARequest("not a stream step") }
                request = try GuardianProtocol.decode(GuardianWire.LiveStream.self, from: message.bytes)
            } catch {
                message.descriptors.forEach { close($0) }
                return fail(id, .init(.invalidDescriptor, code: "bad_message", "not a stream step (\(error)): the stream ends"), socket, mode)
            }
            guard request.step == .frame || message.descriptors.isEmpty else {
                message.descriptors.forEach { close($0) }
                return fail(id, .init(.invalidDescriptor, code: "bad_message", "only a frame carries a descriptor: the stream ends"), socket, mode)
            }
            switch request.step {
            case .frame:
                guard message.descriptors.count == 1 else {
                    message.descriptors.forEach { close($0) }
                    return fail(id, .init(.invalidDescriptor, code: "bad_message", "a frame carries exactly one descriptor: the stream ends"), socket, mode)
                }
                let fd = message.descriptors[0]
                let bytes: [UInt8]
                do throws(GuardianWire.Analyze.Failure) { bytes = try Self.frameBytes(fd) } catch {
                    close(fd)
                    return fail(id, error, socket, mode)
                }
                close(fd)
                analyzer.analyze(VideoStreamFrame(.encoded(bytes)))
                // At most so many frames read a second: the rest wait in the socket.
                if let last = lastFrame, ContinuousClock.now - last < frameSpacing {
                    let pause = frameSpacing - (ContinuousClock.now - last)
                    usleep(UInt32(max(0, pause.components.attoseconds / 1_000_000_000_000)))
                }
                lastFrame = .now
            case .continueStream:
                analyzer.continueStream()
            case .end:
                // The frame waiting is judged and the last changes sent, then the counts.
                let ended = DispatchSemaphore(value: 0)
                let counts = Locked(GuardianWire.LiveStream.Counts())
                Task.detached {
                    let statistics = await analyzer.end()
                    await forwarding.value
                    counts.withLock { $0 = .init(seen: statistics.seen, judged: statistics.judged, dropped: statistics.dropped, failed: statistics.failed) }
                    ended.signal()
                }
                ended.wait()
                // Its place is free before the client hears it ended.
                state.withLock { _ = $0.open.removeValue(forKey: id) }
                _ = Self.send(.init(ended: counts.withLock { $0 }), mode: mode, on: socket)
                return "end"
            case .begin:
                return fail(id, .init(.invalidDescriptor, code: "bad_message", "the stream has begun already: the stream ends"), socket, mode)
            }
        }
    }

    /// Ends the stream with `failure` (the last answer); why, for the log.
    private func fail(_ id: UInt64, _ failure: GuardianWire.Analyze.Failure, _ socket: LocalSocket, _ mode: AnalysisMode) -> String {
        // Its place is free before the client hears it ended.
        state.withLock { _ = $0.open.removeValue(forKey: id) }
        _ = Self.send(.init(failure: failure), mode: mode, on: socket)
        logger.notice("an application's stream was ended: \(failure.message)")
        return failure.message
    }

    static func counts(_ analyzer: VideoStreamAnalyzer) -> GuardianWire.LiveStream.Counts {
        let s = analyzer.statistics
        return .init(seen: s.seen, judged: s.judged, dropped: s.dropped, failed: s.failed)
    }

    /// A frame's bytes: the descriptor checked as the `analyze` verb checks a picture's (open
    /// for reading, a regular file), at most ``GuardianWire/LiveStream/Limits/maxFrameBytes``,
    /// before a byte is read; then read whole (pread from 0).
    static func frameBytes(_ fd: Int32) throws(GuardianWire.Analyze.Failure) -> [UInt8] {
        if let refused = DescriptorJudge.check(fd, kind: .image) { throw refused }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .init(.invalidDescriptor, code: "bad_descriptor", "the frame's descriptor cannot be examined") }
        let limit = GuardianWire.LiveStream.Limits.maxFrameBytes
        guard Int(info.st_size) <= limit else {
            throw .init(.limitsExceeded, code: "too_large", "a frame of \(info.st_size) bytes is over the limit of \(limit >> 20) MiB")
        }
        let count = Int(info.st_size)
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { buffer -> Int in
            var done = 0
            while done < count {
                let n = pread(fd, buffer.baseAddress! + done, count - done, off_t(done))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                done += n
            }
            return done
        }
        return Array(bytes.prefix(read))
    }

    /// Sends one message of the stream's answer; false when the client did not take it.
    @discardableResult
    static func send(_ answer: GuardianWire.LiveStream.Answer, mode: AnalysisMode, on socket: LocalSocket) -> Bool {
        let wire = GuardianAnswer(verb: .stream, role: .child, mode: mode, answer: answer)
        do { try socket.send(GuardianProtocol.encode(wire)) } catch { return false }
        return true
    }
}
