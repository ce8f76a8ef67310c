#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AccountPipeline
import GuardianAPI
import Locking
import Logging
import MediaDecoding
import SensitivityAnalysis
import ServiceSupport

/// `BeginStream` and the stream objects on a protected account's session bus
/// (``GuardedAnalysisBus``): each stream is judged by the guardian service over a connection of
/// its own (``ForwardedStream``), which decides the policy (`descriptive` for a child) and
/// judges with the account's own sandboxed worker. The objects have the agent's methods,
/// properties and signals (`AnalyzeFrame`, `AnalyzeRawFrame`, `AnalyzeRawFrames`,
/// `ContinueStream`, `End`; `AnalysisChanged`, `RawFramesEnded`).
///
/// At most ``GuardianWire/LiveStream/Limits/streamsPerAccount`` streams at once (the service's own
/// bound, which it enforces whatever a client does); a caller that leaves the bus has its streams
/// ended at once (their connections shut: the service stops judging them).
final class ForwardedStreams: Sendable {
    private struct State {
        var next: UInt64 = 0
        var streams: [String: ForwardedStream] = [:]
        /// Streams being begun (counted against the bound).
        var beginning = 0
        /// Callers that left the bus while one of their streams was being begun (kept briefly).
        var left: Set<String> = []
        var stopped = false
    }

    private let state = Locked(State())
    private let connect: ForwardedAnalysis.Connect
    private let logger: Logger
    private let service: @Sendable () -> SessionBusService?

    init(connect: @escaping ForwardedAnalysis.Connect, logger: Logger, service: @escaping @Sendable () -> SessionBusService?) {
        self.connect = connect
        self.logger = logger
        self.service = service
    }

    /// The stream at `path` when it is `caller`'s.
    func stream(at path: String, for caller: String) -> ForwardedStream? {
        state.withLock { $0.streams[path] }.flatMap { $0.owner == caller ? $0 : nil }
    }

    // MARK: - BeginStream

    /// `BeginStream(s participant, s direction)`: the object path once the service began it.
    func begin(_ call: SessionBusService.Call) {
        let (participant, rawDirection) = call.withArguments { ($0.string() ?? "", $0.string() ?? "") }
        guard let direction = VideoStreamAnalyzer.StreamDirection(rawValue: rawDirection) else {
            return call.fail("org.freedesktop.DBus.Error.InvalidArgs", "direction must be \"incoming\" or \"outgoing\", not \"\(rawDirection)\"")
        }
        let limit = GuardianWire.LiveStream.Limits.streamsPerAccount
        let refused = state.withLock { s -> (String, String)? in
            if s.stopped { return ("org.freedesktop.DBus.Error.ServiceUnknown", "the service is stopping") }
            guard s.streams.count + s.beginning < limit else {
                return ("org.freedesktop.DBus.Error.LimitsExceeded", "\(limit) streams of this account's applications are open already: end one first")
            }
            s.beginning += 1
            return nil
        }
        if let refused { return call.fail(refused.0, refused.1) }
        let caller = call.sender
        let thread = Thread { [self] in
            // The place taken above is given back before the call is answered (a caller's next
            // BeginStream must see the stream counted once: open, not still beginning).
            let client: GuardianClient
            do { client = try connect() } catch {
                state.withLock { $0.beginning -= 1 }
                return call.fail(AnalysisBus.errorPrefix + "Unavailable", "the guardian service cannot be asked: \(error)")
            }
            let policy: AnalysisPolicy
            switch client.beginStream(participant: participant, direction: direction) {
            case .success(let began): policy = began
            case .failure(let failure):
                client.cancel()
                state.withLock { $0.beginning -= 1 }
                return call.fail(ForwardedAnalysis.errorName(failure), failure.message)
            }
            let id = state.withLock { s -> UInt64 in s.next += 1; return s.next }
            let path = "\(AnalysisBus.objectPath)/stream/\(id)"
            let service = self.service
            let stream = ForwardedStream(path: path, owner: caller, participant: participant, direction: direction, policy: policy,
                                         client: client) { [weak self] advice in
                // Only while the object is there: nothing after the caller left.
                guard self?.state.withLock({ $0.streams[path] != nil }) == true, let bus = service() else { return }
                AnalysisBus.sendAdvice(on: bus, path: path, to: caller, indicate: advice.indicate, interrupt: advice.interrupt, mute: advice.mute)
            }
            // A caller that left while its stream began has it ended at once (callerLeft ran already).
            let kept = state.withLock { s -> Bool in
                s.beginning -= 1
                defer { if s.beginning == 0 { s.left.removeAll() } }
                guard !s.stopped, !s.left.contains(caller) else { return false }
                s.streams[path] = stream
                return true
            }
            guard kept else {
                stream.cancel()
                return call.fail("org.freedesktop.DBus.Error.ServiceUnknown", "the caller left, or the service is stopping")
            }
            call.reply([.objectPath(path)])
        }
        thread.name = "forward-stream"
        thread.stackSize = 1 << 18
        thread.start()
    }

    // MARK: - The stream's methods

    /// A call on one of the caller's streams (its route and signature checked by the bus).
    func handle(_ call: SessionBusService.Call, _ stream: ForwardedStream) {
        switch call.member {
        case "AnalyzeFrame":
            guard let fd = AnalysisBus.readable(call.withArguments { $0.unixFD() }, call, of: "frame") else { return }
            defer { close(fd) }
            do throws(AnalysisBus.Failure) {
                try Self.checkSize(fd, bytes: nil)
                stream.submit(.encoded(try AnalysisBus.readFrame(fd, bytes: nil)))
                call.reply([])
            } catch {
                call.fail(error.name, error.message)
            }
        case "AnalyzeRawFrame":
            let (passed, width, height, format) = call.withArguments { r in (r.unixFD(), r.uint32(), r.uint32(), r.string()) }
            guard let fd = AnalysisBus.readable(passed, call, of: "frame") else { return }
            defer { close(fd) }
            do throws(AnalysisBus.Failure) {
                stream.submit(.raw(try AnalysisBus.rawFrame(fd, width: Int(width ?? 0), height: Int(height ?? 0), format: format ?? "")))
                call.reply([])
            } catch {
                call.fail(error.name, error.message)
            }
        case "AnalyzeRawFrames":
            let (passed, width, height, format) = call.withArguments { r in (r.unixFD(), r.uint32(), r.uint32(), r.string()) }
            guard let fd = AnalysisBus.readable(passed, call, of: "frame"),
                  let pipe = AnalysisBus.rawFramePipe(call, fd: fd, width: width, height: height, format: format, attach: stream.attach) else { return }
            let path = stream.path, caller = call.sender, service = self.service
            pipe.start(deliver: { [weak stream] frame in
                stream?.submit(.raw(frame))
            }, ended: { [weak self, weak stream] frames, reason in
                stream?.detach(pipe)
                guard self?.state.withLock({ $0.streams[path] != nil }) == true, let bus = service() else { return }
                bus.signal(path: path, interface: AnalysisBus.streamInterface, member: "RawFramesEnded", [.uint64(frames), .string(reason)], destination: caller)
            })
            call.reply([])
        case "ContinueStream":
            stream.continueStream()
            call.reply([])
        case "End":
            // The frame waiting is judged and the last changes sent before the answer; then the object is gone.
            stream.end { [weak self] in
                self?.state.withLock { s in
                    if s.streams[stream.path] === stream { s.streams[stream.path] = nil }
                }
                call.reply([])
            }
        default:
            call.fail("org.freedesktop.DBus.Error.UnknownMethod", "\(call.path) has no method \(call.interface).\(call.member)")
        }
    }

    /// An encoded frame over the guardian service's bound is refused before it is read.
    static func checkSize(_ fd: Int32, bytes: Int?) throws(AnalysisBus.Failure) {
        var info = stat()
        let limit = GuardianWire.LiveStream.Limits.maxFrameBytes
        if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int(info.st_size) > limit {
            throw AnalysisBus.Failure(name: "org.freedesktop.DBus.Error.LimitsExceeded",
                                      message: "a frame of \(info.st_size) bytes is over the guardian service's limit of \(limit >> 20) MiB")
        }
    }

    // MARK: - Leaving

    /// The caller left the bus: its streams end at once (the service stops judging them).
    func callerLeft(_ caller: String) {
        let streams = state.withLock { s -> [ForwardedStream] in
            let mine = s.streams.values.filter { $0.owner == caller }
            for stream in mine { s.streams[stream.path] = nil }
            // Unique names are never reused on a bus: remembered while streams are being begun.
            if s.beginning > 0 { s.left.insert(caller) } else { s.left.removeAll() }
            return mine
        }
        streams.forEach { $0.cancel() }
        if !streams.isEmpty { logger.info("\(caller) left the session bus: \(streams.count) stream(s) ended") }
    }

    /// Ends every stream (the forwarder stops).
    func stop() {
        let streams = state.withLock { s -> [ForwardedStream] in
            s.stopped = true
            defer { s.streams = [:] }
            return Array(s.streams.values)
        }
        streams.forEach { $0.cancel() }
    }
}
