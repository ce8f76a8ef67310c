import Foundation
import GuardianAPI
import QuarantineCore
import SensitivityAnalysis

/// What a handler gives back: its verb's answer, a descriptor to pass with it (the preview), and
/// what changed in what every answer's header says (a new mode, a PIN set).
public struct Served<Answer> {
    public var answer: Answer
    public var preview: Int32? = nil
    public var mode: AnalysisMode? = nil
    public var pinIsSet: Bool? = nil

    public init(answer: Answer, preview: Int32? = nil, mode: AnalysisMode? = nil, pinIsSet: Bool? = nil) {
        self.answer = answer
        self.preview = preview
        self.mode = mode
        self.pinIsSet = pinIsSet
    }
}

/// One verb's entry in the route table (USBGuard's way: each handler is registered with the
/// access it needs; a guardian service checks it through ``GuardianRules`` once, before the
/// handler, never inside it). Both backends serve a request through its route.
public struct BackendRoute: Sendable {
    public let verb: GuardianVerb
    public let access: GuardianAccess
    /// Runs the handler on a request of this verb's type.
    let handle: @Sendable (ReviewDesk, any GuardianRequest) throws -> Served<any Sendable>
    /// Reads the verb's request from a message, runs its handler, encodes its answer (a
    /// malformed request is answered with the typed error, a refusal with its reason).
    public let serve: @Sendable (ReviewDesk, [UInt8]) -> (bytes: [UInt8], preview: Int32?)

    /// The route of `Request`'s verb: `handler` gets the request as its own type and throws the
    /// core's refusals.
    static func to<Request: GuardianRequest>(_ type: Request.Type, access: GuardianAccess,
                                             _ handler: @escaping @Sendable (ReviewDesk, Request) throws -> Served<Request.Answer>) -> BackendRoute {
        BackendRoute(verb: Request.verb, access: access, handle: { desk, request in
            let served = try handler(desk, request as! Request)
            return Served<any Sendable>(answer: served.answer, preview: served.preview, mode: served.mode, pinIsSet: served.pinIsSet)
        }, serve: { desk, bytes in
            let request: Request
            do throws(GuardianProtocolError) { request = try GuardianProtocol.decode(Request.self, from: bytes) } catch {
                return (GuardianProtocol.encode(desk.answer(Request.self, nil, refusal: .invalid(error))), nil)
            }
            do {
                let served = try handler(desk, request)
                var answer = desk.answer(Request.self, served.answer)
                if let mode = served.mode { answer.mode = mode }
                if let pinIsSet = served.pinIsSet { answer.pinIsSet = pinIsSet }
                return (GuardianProtocol.encode(answer), served.preview)
            } catch {
                return (GuardianProtocol.encode(desk.answer(Request.self, nil, refusal: ReviewDesk.refusal(for: error))), nil)
            }
        })
    }

    // MARK: - The route table

    /// Every verb, the access it declares at a guardian service, and its handler; one entry each.
    /// A new verb is one request type in ``GuardianWire``, one entry here, one core call.
    public static let table: [GuardianVerb: BackendRoute] = Dictionary(uniqueKeysWithValues: [
        to(GuardianWire.Hello.self, access: .anyone) { desk, _ in Served(answer: desk.hello()) },
        to(GuardianWire.Status.self, access: .anyone) { desk, _ in Served(answer: try desk.status()) },
        to(GuardianWire.List.self, access: .anyone) { desk, request in try desk.list(request) },
        to(GuardianWire.Show.self, access: .anyone) { desk, request in try desk.show(request) },
        to(GuardianWire.History.self, access: .guardian) { desk, request in try desk.history(request) },
        to(GuardianWire.Release.self, access: .anyone) { desk, request in try desk.release(request) },
        to(GuardianWire.Block.self, access: .anyone) { desk, request in try desk.block(request) },
        to(GuardianWire.Ask.self, access: .protectedAccount) { desk, request in try desk.ask(request) },
        to(GuardianWire.Purge.self, access: .anyone) { desk, request in try desk.purge(request) },
        to(GuardianWire.Mode.self, access: .guardian) { desk, request in try desk.changeMode(request) },
        to(GuardianWire.Watch.self, access: .guardian) { desk, request in try desk.watch(request) },
        to(GuardianWire.WatchList.self, access: .anyone) { desk, _ in Served(answer: try desk.watchList()) },
        to(GuardianWire.SetPIN.self, access: .guardian) { desk, request in try desk.setPIN(request) },
        to(GuardianWire.Count.self, access: .anyone) { desk, _ in Served(answer: try desk.count()) },
        to(GuardianWire.Reveal.self, access: .anyone) { desk, request in try desk.reveal(request) },
        // Served by the guardian service's analysis with the one descriptor the request carries
        // (GuardianServer+Analysis); a request that reaches the desk came without one.
        to(GuardianWire.Analyze.self, access: .protectedAccount) { _, _ in throw GuardianRefusal.refused(GuardianWire.Analyze.needsDescriptor) },
        // Served by the guardian service's streams on a connection of their own, from a `begin`
        // step (GuardianServer+Streams); a request that reaches the desk did not begin one.
        to(GuardianWire.LiveStream.self, access: .protectedAccount) { _, _ in throw GuardianRefusal.refused(GuardianWire.LiveStream.needsConnection) },
    ].map { ($0.verb, $0) })
}
