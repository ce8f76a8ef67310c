import GuardianAPI
import QuarantineCore
import SensitivityAnalysis

/// The one way a front end (the CLI today; a D-Bus API or a review page next) reaches the core:
/// one request type per use case (``GuardianWire``), answered the same by the person's own
/// vault (``LocalBackend``) or by the guardian service protecting the account (``SocketBackend``).
/// Chosen once, when the front end starts. The rules are the core's: a front end asks
/// ``BackendReply/approval(for:)`` what an action needs, asks the person, and sends the answer
/// (a PIN) with the request; the backend's core checks it again.
public protocol QuarantineBackend: Sendable {
    /// The account whose vault this reaches.
    var account: String { get }
    /// Whether requests go to a guardian service (not this account's own files).
    var isRemote: Bool { get }
    /// Serves `request`: its answer, or throws a ``BackendError``.
    func send<Request: GuardianRequest>(_ request: Request) throws -> BackendReply<Request.Answer>
}

extension QuarantineBackend {
    /// Who the caller is to the backend, the mode in force, whether a PIN is set.
    public func session() throws -> BackendReply<GuardianWire.Hello.Answer> { try send(GuardianWire.Hello()) }
}

/// One served answer: what every answer says (whose vault, the caller's role, the mode in force,
/// whether a PIN is set), the verb's answer, and the blurred preview's descriptor when one came
/// (the receiver closes it).
public struct BackendReply<Answer: Sendable>: Sendable {
    public var user: String
    /// The caller's role at a guardian service; nil locally (the account's own person).
    public var role: GuardianRole?
    public var mode: AnalysisMode
    public var pinIsSet: Bool
    public var answer: Answer
    public var preview: Int32?

    public init(user: String, role: GuardianRole?, mode: AnalysisMode, pinIsSet: Bool, answer: Answer, preview: Int32? = nil) {
        self.user = user
        self.role = role
        self.mode = mode
        self.pinIsSet = pinIsSet
        self.answer = answer
        self.preview = preview
    }

    /// The core's name for the caller: a guardian, or the account itself (locally, or the
    /// protected account at its service).
    public var caller: GuardianCaller { role == .guardian ? .guardian : .protectedAccount }

    /// What `action` needs from this caller in this mode (the core's ``GuardianRules``).
    public func approval(for action: ProtectedAction) -> Approval {
        GuardianRules.approval(for: action, in: mode, pinIsSet: pinIsSet, caller: caller)
    }

    /// The account itself, in child mode: the plain words of descriptive interventions.
    public var childWording: Bool { caller == .protectedAccount && mode == .child }
}

/// Why a request was not served.
public enum BackendError: Error, Sendable, CustomStringConvertible {
    /// The core (or the service) said no, or could not do it: typed, as the wire carries it.
    case refusal(GuardianRefusal)
    /// The backend cannot be reached (no service answers, the connection closed, the vault
    /// cannot be opened).
    case unreachable(String)

    public var description: String {
        switch self {
        case .refusal(let refusal): refusal.description
        case .unreachable(let words): words
        }
    }
}
