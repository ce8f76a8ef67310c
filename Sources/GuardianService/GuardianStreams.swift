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
/// - the socket is drained as fast as the client writes; each frame's descriptor is checked as
///   the `analyze` verb checks (open for reading, a regular file, at most
///   ``GuardianWire/LiveStream/Limits/maxFrameBytes``) before a byte is read, and only the newest
///   is kept (an older one is closed unread: dropped, counted). At most ``maxFramesRead`` a second
///   are read into the analyzer, whose one slot drops the oldest again: nothing queues;
/// - judgements go through one ``StreamFrameGate`` for the account: one frame at a time, at
///   most 8 a second, so the streams never hold more than one of the worker's threads and the
///   account's arriving files are judged beside them;
/// - a client that closes its connection (or does not take its answers within
///   ``sendTimeout``) has its stream cancelled at once.
final class GuardianStreams: Sendable {
    /// The engine and settings in force, asked at each stream's beginning (the agent's).
    typealias Provider = GuardianAnalysis.Provider

    /// Frames read a second per stream at most (a newer one replaces the one waiting, unread).
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
        // The gate spaces the judgements of all the account's streams together: none here too.
        let analyzer = VideoStreamAnalyzer(participantUUID: participant, streamDirection: request.direction ?? .incoming, judge: judge,
                                           policy: settings.policy, analysisPolicy: policy, spacing: nil)
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
        // Frames replaced by a newer one before they were read.
        let skipped = Locked(0)
        let forwarding = Task.detached {
            for await change in analyzer.analysisChanges {
                let wire = GuardianWire.LiveStream.Change(shouldIndicateSensitivity: change.shouldIndicateSensitivity, shouldInterruptVideo: change.shouldInterruptVideo,
                                                      shouldMuteAudio: change.shouldMuteAudio, cause: change.cause.rawValue, reasons: change.reasons)
                if !Self.send(.init(change: wire, counts: Self.counts(analyzer, skipped: skipped.withLock { $0 })), mode: mode, on: socket) { broken.withLock { $0 = true } }
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
        // The newest frame's descriptor, checked, waiting to be read (at most one: the socket is
        // drained as fast as the client writes, so nothing waits in its queue either).
        var pending: Int32?
        defer { if let pending { close(pending) } }
        /// Reads the waiting frame into the analyzer's slot.
        func take() {
            guard let fd = pending else { return }
            pending = nil
            defer { close(fd) }
            analyzer.analyze(VideoStreamFrame(.encoded(Self.readFrame(fd))))
            lastFrame = .now
        }
        while true {
            if state.withLock({ $0.stopped }) { return "the service stops" }
            if broken.withLock({ $0 }) { return "the client did not take its answers" }
            if ContinuousClock.now - lastCountsSent >= GuardianWire.LiveStream.Limits.countsInterval {
                let counts = Self.counts(analyzer, skipped: skipped.withLock { $0 })
                if counts != lastCounts {
                    guard Self.send(.init(counts: counts), mode: mode, on: socket) else { return "the client did not take its answers" }
                    lastCounts = counts
                }
                lastCountsSent = .now
            }
            // At most so many frames read a second; the newest waits for its turn.
            var wait = Self.pollInterval
            if pending != nil {
                let due = lastFrame.map { $0 + frameSpacing } ?? .now
                if due <= .now { take() } else {
                    let left = due - .now
                    wait = min(wait, Int32(left.components.attoseconds / 1_000_000_000_000_000) + 1)
                }
            }
            var poller = pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, wait)
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
                do throws(GuardianWire.Analyze.Failure) { try Self.checkFrame(fd) } catch {
                    close(fd)
                    return fail(id, error, socket, mode)
                }
                // A newer frame: the one waiting is dropped unread.
                if let older = pending {
                    close(older)
                    skipped.withLock { $0 += 1 }
                }
                pending = fd
            case .continueStream:
                analyzer.continueStream()
            case .end:
                take()
                // The frame waiting is judged and the last changes sent, then the counts.
                let ended = DispatchSemaphore(value: 0)
                let counts = Locked(GuardianWire.LiveStream.Counts())
                Task.detached {
                    let statistics = await analyzer.end()
                    await forwarding.value
                    let extra = skipped.withLock { $0 }
                    counts.withLock { $0 = .init(seen: statistics.seen + extra, judged: statistics.judged, dropped: statistics.dropped + extra, failed: statistics.failed) }
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

    /// The stream's counts: the analyzer's, and the frames replaced while they waited to be read
    /// (`skipped`: seen and dropped).
    static func counts(_ analyzer: VideoStreamAnalyzer, skipped: Int = 0) -> GuardianWire.LiveStream.Counts {
        let s = analyzer.statistics
        return .init(seen: s.seen + skipped, judged: s.judged, dropped: s.dropped + skipped, failed: s.failed)
    }

    /// Checks a frame's descriptor as the `analyze` verb checks a picture's (open for reading,
    /// a regular file), and its size (at most ``GuardianWire/LiveStream/Limits/maxFrameBytes``),
    /// before a byte is read.
    static func checkFrame(_ fd: Int32) throws(GuardianWire.Analyze.Failure) {
        if let refused = DescriptorJudge.check(fd, kind: .image) { throw refused }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .init(.invalidDescriptor, code: "bad_descriptor", "the frame's descriptor cannot be examined") }
        let limit = GuardianWire.LiveStream.Limits.maxFrameBytes
        guard Int(info.st_size) <= limit else {
            throw .init(.limitsExceeded, code: "too_large", "a frame of \(info.st_size) bytes is over the limit of \(limit >> 20) MiB")
        }
    }

    /// A checked frame's bytes (pread from 0), at most ``GuardianWire/LiveStream/Limits/maxFrameBytes``
    /// whatever the file became since (a shorter file gives fewer bytes, which the worker judges).
    static func readFrame(_ fd: Int32) -> [UInt8] {
        var info = stat()
        let count = fstat(fd, &info) == 0 ? min(max(0, Int(info.st_size)), GuardianWire.LiveStream.Limits.maxFrameBytes) : 0
        return MemoryFile.prefix(of: fd, count: count)
    }

    /// Sends one message of the stream's answer; false when the client did not take it.
    @discardableResult
    static func send(_ answer: GuardianWire.LiveStream.Answer, mode: AnalysisMode, on socket: LocalSocket) -> Bool {
        let wire = GuardianAnswer(verb: .stream, role: .child, mode: mode, answer: answer)
        do { try socket.send(GuardianProtocol.encode(wire)) } catch { return false }
        return true
    }
}
