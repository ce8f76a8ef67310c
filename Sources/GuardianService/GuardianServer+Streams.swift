import Foundation
import GuardianAPI
import QuarantineCore
import ServiceSupport

extension GuardianServer {
    /// Hands the connection to ``GuardianStreams`` when `message` begins a stream: a `stream`
    /// request with the step `begin`, without descriptors, of the protected account (its route's
    /// access checked by ``GuardianRules``). True when it took the connection (it closes it when
    /// the stream ends). Anything else is left to the usual path, which closes every descriptor
    /// and answers through the route why (another caller's, another step, descriptors).
    func takeStream(_ connection: Connection, _ message: LocalSocket.Message) -> Bool {
        guard message.descriptors.isEmpty, (try? GuardianProtocol.verb(of: message.bytes)) == .stream, let route = Self.routes[.stream],
              GuardianRules.access(route.access, for: connection.role.caller, protectedAccount: paths.user) == .none,
              connection.peer.uid == childUID,
              let request = try? GuardianProtocol.decode(GuardianWire.LiveStream.self, from: message.bytes), request.step == .begin else { return false }
        guard let streams else {
            GuardianStreams.send(.init(failure: .init(.unavailable, code: "not_offered", "this guardian service does not judge streams for applications")),
                                 mode: .child, on: connection.socket)
            release(connection)
            return true
        }
        streams.start(request, socket: connection.socket) { [weak self] in
            self?.release(connection)
        }
        return true
    }
}
