import Foundation
import GuardianAPI
import Locking
import Logging
import SensitivityAnalysis
import ServiceSupport

/// The analysis service on the session bus of an account a guardian service protects: the small
/// per-user process in the child's session (`quarantine session-forwarder`, which `quarantine
/// agent` becomes on such an account), owning `io.github.quarantine.Analysis1` so that the child's
/// applications get the child's policy.
///
/// `AnalysisPolicy` comes from the guardian service (the mode its `hello` answer carries, asked
/// every ``refreshInterval``): `descriptive` in child mode, `simple` if a guardian set the account
/// to adult mode, `descriptive` while the service cannot be asked. Never `disabled`: the
/// account's own configuration is not read at all. `AnalyzeImage` and `AnalyzeVideo` are
/// forwarded to the guardian service with the caller's descriptor (``ForwardedAnalysis``), which
/// judges the bytes with the account's own sandboxed worker under its policy; the replies have
/// the agent's shapes. Live streams (`BeginStream`) are judged by the guardian service too, one
/// connection each (``ForwardedStreams``), under the policy it decides. Same-account callers
/// only (``SessionBusService``), as the agent's service.
public final class GuardedAnalysisBus: Sendable {
    /// How often the guardian service is asked for the mode.
    public static let refreshInterval: Duration = .seconds(10)

    private struct State {
        var service: SessionBusService?
        var policy: AnalysisPolicy = .descriptiveInterventions
        var stopped = false
    }

    /// The protected account.
    public let user: String
    private let state: Locked<State>
    private let forwarded: ForwardedAnalysis
    private let streams: ForwardedStreams
    private let logger: Logger
    /// Asks the guardian service for the mode in force (a seam: tests give their own).
    private let askMode: @Sendable (String) -> AnalysisMode?
    private let refreshEvery: Duration
    private let wake = DispatchSemaphore(value: 0)
    private let firstAnswer = DispatchSemaphore(value: 0)
    /// How long ``start(address:user:logger:refreshEvery:askMode:)`` waits for the guardian service's first answer.
    static let firstAnswerWait: DispatchTimeInterval = .seconds(2)

    private init(user: String, logger: Logger, refreshEvery: Duration, askMode: @escaping @Sendable (String) -> AnalysisMode?,
                 connect: @escaping ForwardedAnalysis.Connect) {
        let state = Locked(State())
        self.state = state
        forwarded = ForwardedAnalysis(connect: connect, logger: logger, service: { state.withLock { $0.service } })
        streams = ForwardedStreams(connect: connect, logger: logger, service: { state.withLock { $0.service } })
        self.refreshEvery = refreshEvery
        self.user = user
        self.logger = logger
        self.askMode = askMode
    }

    /// Takes the name on the bus at `address` for `user` and serves until ``stop()``. The
    /// guardian service is asked on a thread of its own, at once (its answer is awaited for at
    /// most ``firstAnswerWait`` before the name is taken: until it comes, `descriptive`), then
    /// every `refreshEvery`: a service slow to answer never holds up the bus. `askMode` asks
    /// the guardian service, `connect` connects to its socket for an analysis (tests give their own).
    public static func start(address: String, user: String, logger: Logger, refreshEvery: Duration = refreshInterval,
                             askMode: @escaping @Sendable (String) -> AnalysisMode? = GuardedAnalysisBus.guardianMode,
                             connect: (@Sendable () throws -> GuardianClient)? = nil) throws -> GuardedAnalysisBus {
        let bus = GuardedAnalysisBus(user: user, logger: logger, refreshEvery: refreshEvery, askMode: askMode,
                                     connect: connect ?? { try GuardianClient(user: user) })
        let thread = Thread { [bus] in bus.refreshLoop() }
        thread.name = "guardian-mode"
        thread.start()
        _ = bus.firstAnswer.wait(timeout: .now() + firstAnswerWait)
        do {
            let service = try SessionBusService.start(address: address, name: AnalysisBus.busName, handler: { [weak bus] call in
                guard let bus else { return call.fail("org.freedesktop.DBus.Error.ServiceUnknown", "the service is stopping") }
                bus.handle(call)
            }, callerGone: { [weak bus] sender in
                bus?.forwarded.callerLeft(sender)
                bus?.streams.callerLeft(sender)
            })
            bus.state.withLock { $0.service = service }
        } catch {
            bus.state.withLock { $0.stopped = true }
            bus.wake.signal()
            throw error
        }
        return bus
    }

    /// Asks the guardian service again now (SIGHUP), not at the next ``refreshInterval``.
    public func refreshNow() { wake.signal() }

    /// The policy applications are told now.
    public var policy: AnalysisPolicy { state.withLock { $0.policy } }

    /// False once the bus connection is gone (the session ended) or ``stop()`` was called.
    public var isServing: Bool { state.withLock { !$0.stopped && $0.service?.isServing == true } }

    /// Leaves the bus. Idempotent. The thread asking the guardian service ends on its own
    /// (at once, or when a question under way is answered or times out).
    public func stop() {
        let service = state.withLock { s -> SessionBusService? in
            defer { s.stopped = true; s.service = nil }
            return s.stopped ? nil : s.service
        }
        guard let service else { return }
        wake.signal()
        forwarded.stop()
        streams.stop()
        service.stop()
    }

    /// The mode the guardian service protecting `user` says is in force; nil when it cannot be asked.
    @Sendable public static func guardianMode(user: String) -> AnalysisMode? {
        guard let client = try? GuardianClient(user: user), let (reply, preview) = try? client.send(GuardianWire.Hello()) else { return nil }
        if let preview { close(preview) }
        return reply.mode
    }

    /// The policy for what the guardian service says: never disabled.
    static func policy(for mode: AnalysisMode?) -> AnalysisPolicy {
        mode == .adult ? .simpleInterventions : .descriptiveInterventions
    }

    private func refreshLoop() {
        refresh()
        firstAnswer.signal()
        let seconds = Double(refreshEvery.components.seconds) + Double(refreshEvery.components.attoseconds) / 1e18
        while !state.withLock({ $0.stopped }) {
            _ = wake.wait(timeout: .now() + seconds)
            if state.withLock({ $0.stopped }) { break }
            refresh()
        }
    }

    /// Asks the guardian service; on a change, `PropertiesChanged`.
    private func refresh() {
        let mode = askMode(user)
        let new = Self.policy(for: mode)
        let (old, service) = state.withLock { s -> (AnalysisPolicy, SessionBusService?) in
            defer { s.policy = new }
            return (s.policy, s.service)
        }
        if mode == nil { logger.debug("the guardian service for \(user) did not answer: applications are told descriptive") }
        guard new != old else { return }
        logger.notice("analysis policy for \(user)'s applications: \(old.rawValue) -> \(new.rawValue) (the guardian service's mode)")
        service?.propertiesChanged(path: AnalysisBus.objectPath, interface: AnalysisBus.interface, [("AnalysisPolicy", .string(new.rawValue))])
    }

    // MARK: - Calls

    private static let routes: [String: String] = [
        "org.freedesktop.DBus.Introspectable.Introspect": "",
        "org.freedesktop.DBus.Properties.Get": "ss",
        "org.freedesktop.DBus.Properties.GetAll": "s",
        "org.freedesktop.DBus.Properties.Set": "ssv",
        "org.freedesktop.DBus.Peer.Ping": "",
        AnalysisBus.interface + ".AnalyzeImage": "h",
        AnalysisBus.interface + ".AnalyzeVideo": "h",
        AnalysisBus.interface + ".BeginStream": "ss",
        AnalysisBus.videoJobInterface + ".Cancel": "",
        AnalysisBus.streamInterface + ".AnalyzeFrame": "h",
        AnalysisBus.streamInterface + ".AnalyzeRawFrame": "huus",
        AnalysisBus.streamInterface + ".AnalyzeRawFrames": "huus",
        AnalysisBus.streamInterface + ".ContinueStream": "",
        AnalysisBus.streamInterface + ".End": "",
    ]

    private func handle(_ call: SessionBusService.Call) {
        guard let signature = Self.routes[call.interface + "." + call.member] else {
            return call.fail("org.freedesktop.DBus.Error.UnknownMethod", "no method \(call.interface).\(call.member) here (see Introspect)")
        }
        guard call.signature == signature else {
            return call.fail("org.freedesktop.DBus.Error.InvalidArgs", "\(call.member) takes (\(signature)), not (\(call.signature))")
        }
        // A caller's own video jobs and streams, and the root object; other callers' objects are not there.
        if call.path != AnalysisBus.objectPath {
            if let job = forwarded.job(at: call.path, for: call.sender) { return handleJob(call, job) }
            if let stream = streams.stream(at: call.path, for: call.sender) { return handleStream(call, stream) }
            return call.fail("org.freedesktop.DBus.Error.UnknownObject", "no object \(call.path) for this caller")
        }
        switch call.member {
        case "Introspect":
            call.reply([.string(AnalysisBusInterface.document(AnalysisBusInterface.analysis))])
        case "Get", "GetAll":
            call.replyProperties([("AnalysisPolicy", .string(policy.rawValue))], of: AnalysisBus.interface)
        case "Set":
            call.fail("org.freedesktop.DBus.Error.PropertyReadOnly", "every property here is read-only")
        case "Ping":
            call.reply([])
        case "AnalyzeImage":
            forwarded.analyzeImage(call)
        case "AnalyzeVideo":
            forwarded.analyzeVideo(call)
        case "BeginStream":
            streams.begin(call)
        default:
            // A video job's or a stream's method on the root object; a descriptor that came with
            // the call is closed when the message goes.
            call.fail("org.freedesktop.DBus.Error.UnknownMethod", "\(call.path) has no method \(call.interface).\(call.member)")
        }
    }

    /// A call on one of the caller's streams: its properties, `Introspect`, `Ping`, and the
    /// stream's own methods.
    private func handleStream(_ call: SessionBusService.Call, _ stream: ForwardedStream) {
        switch call.interface {
        case "org.freedesktop.DBus.Introspectable":
            call.reply([.string(AnalysisBusInterface.document(AnalysisBusInterface.stream))])
        case "org.freedesktop.DBus.Properties":
            guard call.member != "Set" else { return call.fail("org.freedesktop.DBus.Error.PropertyReadOnly", "every property here is read-only") }
            call.replyProperties(stream.properties, of: AnalysisBus.streamInterface)
        case "org.freedesktop.DBus.Peer":
            call.reply([])
        case AnalysisBus.streamInterface:
            streams.handle(call, stream)
        default:
            call.fail("org.freedesktop.DBus.Error.UnknownMethod", "\(call.path) has no method \(call.interface).\(call.member)")
        }
    }

    /// A call on one of the caller's video jobs: its properties, `Introspect`, `Ping`, `Cancel`.
    private func handleJob(_ call: SessionBusService.Call, _ job: BusVideoJob) {
        switch call.interface + "." + call.member {
        case "org.freedesktop.DBus.Introspectable.Introspect":
            call.reply([.string(AnalysisBusInterface.document(AnalysisBusInterface.videoJob))])
        case "org.freedesktop.DBus.Properties.Get", "org.freedesktop.DBus.Properties.GetAll":
            call.replyProperties(job.properties, of: AnalysisBus.videoJobInterface)
        case "org.freedesktop.DBus.Properties.Set":
            call.fail("org.freedesktop.DBus.Error.PropertyReadOnly", "every property here is read-only")
        case "org.freedesktop.DBus.Peer.Ping":
            call.reply([])
        case AnalysisBus.videoJobInterface + ".Cancel":
            job.cancel()
            call.reply([])
        default:
            call.fail("org.freedesktop.DBus.Error.UnknownMethod", "\(call.path) has no method \(call.interface).\(call.member)")
        }
    }
}
