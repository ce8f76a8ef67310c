import Foundation
import GuardianAPI
import QuarantineCore
import ServiceSupport

extension GuardianServer {
    /// Hands `message` to the analysis when it is an `analyze` request of the protected account
    /// carrying exactly one descriptor: true when it took the message (its descriptor and the
    /// connection, which it closes after the answer). Anything else is left to the usual path,
    /// which closes every descriptor and refuses (another caller's, a count other than one,
    /// any other verb's).
    func takeAnalysis(_ connection: Connection, _ message: LocalSocket.Message) -> Bool {
        guard message.descriptors.count == 1, (try? GuardianProtocol.verb(of: message.bytes)) == .analyze, let route = Self.routes[.analyze],
              GuardianRules.access(route.access, for: connection.role.caller, protectedAccount: paths.user) == .none,
              connection.peer.uid == childUID else { return false }
        let fd = message.descriptors[0]
        guard let analysis else {
            close(fd)
            _ = GuardianAnalysis.sendAnswer(.init(failure: .init(.unavailable, code: "not_offered", "this guardian service does not analyse for applications")),
                                            mode: .child, on: connection.socket)
            release(connection)
            return true
        }
        analysis.start(bytes: message.bytes, fd: fd, socket: connection.socket) { [weak self] in
            self?.release(connection)
        }
        return true
    }
}
