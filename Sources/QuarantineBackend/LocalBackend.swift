import Foundation
import GuardianAPI
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis

/// The backend of an account that no guardian service protects: its own vault and database,
/// its own configuration, and the core's rules in the mode in force (the guardian PIN in child
/// mode). Each request is served through its route, as a guardian service serves it, without
/// the access check: the person owns everything here.
public struct LocalBackend: QuarantineBackend {
    /// Opens the vault: read only for the verbs that change nothing (the front end says what it
    /// could not open, or recovered).
    public typealias VaultOpener = @Sendable (_ readOnly: Bool) throws -> Vault

    public let account: String
    public var isRemote: Bool { false }
    let openVault: VaultOpener
    let configurationPath: String?
    let environment: [String: String]

    /// The verbs that change nothing: their vault is opened read only (a panel applet may poll them).
    public static let readOnlyVerbs: Set<GuardianVerb> = [.hello, .status, .list, .show, .history, .watchList, .count]

    public init(account: String? = nil, configurationPath: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment,
                openVault: @escaping VaultOpener) {
        self.account = account ?? AccountLookup.account(uid: getuid())?.name ?? "uid \(getuid())"
        self.configurationPath = configurationPath
        self.environment = environment
        self.openVault = openVault
    }

    /// The desk serving this account's requests over `vault`, in the mode in force.
    public func desk(vault: Vault) -> ReviewDesk {
        let environment = environment
        let mode = ModeInForce.current(configurationPath: configurationPath, store: vault.store, environment: environment)
        return ReviewDesk(review: Review(vault: vault, mode: mode), account: account, role: nil, configurationPath: configurationPath,
                          environment: environment, reload: { Self.reloadAgent(environment: environment) },
                          agentState: { vault in Self.agentState(vault: vault, environment: environment) })
    }

    public func send<Request: GuardianRequest>(_ request: Request) throws -> BackendReply<Request.Answer> {
        guard let route = BackendRoute.table[Request.verb] else { throw BackendError.refusal(.invalid(.unknownVerb(Request.verb.rawValue))) }
        let desk = desk(vault: try openVault(Self.readOnlyVerbs.contains(Request.verb)))
        let served: Served<any Sendable>
        do { served = try route.handle(desk, request) } catch {
            throw BackendError.refusal(ReviewDesk.refusal(for: error))
        }
        return BackendReply(user: account, role: nil, mode: served.mode ?? desk.review.mode.mode, pinIsSet: served.pinIsSet ?? desk.review.pinIsSet,
                            answer: served.answer as! Request.Answer, preview: served.preview)
    }

    // MARK: - The agent

    /// Sends SIGHUP to a running agent, so it re-reads the configuration; says what happened.
    public static func reloadAgent(environment: [String: String]) -> String {
        guard let pid = AgentLock.runningAgent(environment: environment), pid > 0 else { return "The agent is not running; it uses this when it starts." }
        return kill(pid, SIGHUP) == 0 ? "The running agent (pid \(pid)) picked this up." : "Could not signal the agent (pid \(pid)): restart it."
    }

    /// Whether the agent runs (it holds its lock), its pid, and the status it published last
    /// (beside its lock while the database refuses its writes).
    static func agentState(vault: Vault, environment: [String: String]) -> (running: Bool, pid: Int32?, status: AgentStatus?) {
        let pid = AgentLock.runningAgent(environment: environment)
        var status = try? vault.store.agentStatus()
        if let pid, let beside = AgentStatus.besideTheLock(environment: environment), beside.pid == pid, beside.updatedAt > status?.updatedAt ?? .distantPast {
            status = beside
        }
        return (pid != nil, pid, status)
    }
}
