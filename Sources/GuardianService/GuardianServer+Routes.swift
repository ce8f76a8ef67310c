import AccountPipeline
import Foundation
import GuardianAPI
import QuarantineBackend
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis
import ServiceSupport

extension GuardianRole {
    /// The core's name for this caller.
    var caller: GuardianCaller { self == .child ? .protectedAccount : .guardian }
}

extension GuardianServer {
    // MARK: - The route table

    /// Every verb, the access it declares, and its handler: the backend's one table
    /// (``BackendRoute/table``), which the local backend serves too.
    static var routes: [GuardianVerb: BackendRoute] { BackendRoute.table }

    /// Reads the verb of `bytes`, checks its route's access for `role` through ``GuardianRules``
    /// (before the request's fields are read), then serves it. A message that is not a request,
    /// of another version or of an unknown verb is answered with its typed error.
    func respond(to bytes: [UInt8], role: GuardianRole, peer: LocalSocket.Peer) -> (bytes: [UInt8], preview: Int32?) {
        let verb: GuardianVerb
        do throws(GuardianProtocolError) { verb = try GuardianProtocol.verb(of: bytes) } catch { return (GuardianProtocol.refusal(.invalid(error)), nil) }
        guard let route = Self.routes[verb] else { return (GuardianProtocol.refusal(.invalid(.unknownVerb(verb.rawValue))), nil) }
        if case .refused(let words) = GuardianRules.access(route.access, for: role.caller, protectedAccount: paths.user) {
            return (GuardianProtocol.refusal(.refused(words), verb: verb), nil)
        }
        return route.serve(desk(role, peer: peer), bytes)
    }

    /// The desk serving `role`'s request: the review in force acting as them, the protected
    /// account's home (folders are watched there only), paths as people know them, answers in pages.
    func desk(_ role: GuardianRole, peer: LocalSocket.Peer) -> ReviewDesk {
        let sharedFolders = sharedFolders, logger = logger, reload = reload
        let translated = sharedFolders.contains { $0.reachedAt != $0.path }
        return ReviewDesk(review: review(role, peer: peer), account: paths.user, role: role, configurationPath: configurationPath,
                          environment: ["HOME": home], watchWithin: home, paged: true,
                          shownPath: { translated ? SharedFolder.shown($0, in: sharedFolders) : $0 },
                          shownText: { translated ? SharedFolder.shownText($0, in: sharedFolders) : $0 },
                          reload: { reload(); return nil },
                          agentState: { vault in (true, getpid(), try? vault.store.agentStatus()) },
                          log: { logger.notice("\($0)") })
    }

    /// The review in force, acting as `role`.
    func review(_ role: GuardianRole, peer: LocalSocket.Peer) -> Review {
        let configured: Result<AnalysisMode, Settings.ConfigurationError> = Result { () throws(Settings.ConfigurationError) in
            try ConfigurationFile.loadExisting(configurationPath).settings.mode
        }
        let recorded = (try? vault.store.recordedMode())??.mode
        let mode = ModeInForce.resolve(configuration: configured, recorded: recorded, runningAgent: nil)
        let actor = role == .guardian ? "guardian (uid \(peer.uid))" : paths.user
        return Review(vault: vault, mode: mode, actor: actor)
    }
}
