import Foundation
import GuardianAPI
import QuarantineCore
import SensitivityAnalysis
import ServiceSupport

/// The backend of an account a guardian service protects: every request goes over the
/// service's socket (``GuardianClient``), where the service checks the caller's access and its
/// core decides. Paged answers are fetched whole.
public struct SocketBackend: QuarantineBackend {
    public let client: GuardianClient
    public var account: String { client.paths.user }
    public var isRemote: Bool { true }

    public init(client: GuardianClient) { self.client = client }

    /// Connects to the service protecting `user`.
    public init(user: String) throws {
        do { client = try GuardianClient(user: user) } catch {
            throw BackendError.unreachable("no guardian service answers for \(user) (\(GuardianPaths(user: user).socket)): is it enabled? 'sudo quarantine guardian status'")
        }
    }

    public func send<Request: GuardianRequest>(_ request: Request) throws -> BackendReply<Request.Answer> {
        let sent: (GuardianAnswer<Request.Answer>, Int32?)
        do {
            if let paged = request as? any GuardianPagedRequest {
                let (whole, preview) = try Self.sendWhole(client, paged)
                sent = (whole as! GuardianAnswer<Request.Answer>, preview)
            } else {
                let (answer, preview) = try client.send(request)
                sent = (answer, preview)
            }
        } catch {
            throw BackendError.unreachable("\(error)")
        }
        let (header, preview) = sent
        if let refusal = header.refusal {
            if let preview { close(preview) }
            throw BackendError.refusal(refusal)
        }
        guard let answer = header.answer else {
            if let preview { close(preview) }
            throw BackendError.unreachable("the guardian service for \(account) sent an empty answer")
        }
        return BackendReply(user: header.user ?? account, role: header.role, mode: header.mode ?? .child, pinIsSet: header.pinIsSet ?? false,
                            answer: answer, preview: preview)
    }

    /// Every page of `request` (its answer as `Any`: the caller knows its type).
    static func sendWhole<Request: GuardianPagedRequest>(_ client: GuardianClient, _ request: Request) throws -> (Any, Int32?) {
        let (answer, preview) = try client.send(request)
        return (answer, preview)
    }
}
