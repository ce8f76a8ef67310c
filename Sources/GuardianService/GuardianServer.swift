import Foundation
import GuardianAPI
import Logging
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis
import ServiceSupport

/// The guardian service's socket: every request is believed only for the user the kernel says
/// sent it (SO_PEERCRED). The protected account sees its own items (previews only, never the
/// original) and needs the guardian PIN, checked here with its waits; root and members of
/// `quarantine-guardians` act as guardian without it. Decisions are the core's (``Review``).
final class GuardianServer: Sendable {
    let paths: GuardianPaths
    let childUID: uid_t
    /// The protected account's home (its folders are there).
    let home: String
    let vault: Vault
    let configurationPath: String
    let logger: Logger
    let listener: LocalSocket
    /// Called after the configuration changed (the mode): the agent reloads it.
    let reload: @Sendable () -> Void

    init(paths: GuardianPaths, childUID: uid_t, home: String, vault: Vault, configurationPath: String, logger: Logger,
         reload: @escaping @Sendable () -> Void) throws(ServiceError) {
        self.paths = paths
        self.childUID = childUID
        self.home = home
        self.vault = vault
        self.configurationPath = configurationPath
        self.logger = logger
        self.reload = reload
        // Anyone may connect (0666); who may do what is decided per request by the peer's user.
        listener = try LocalSocket.listen(at: paths.socket, mode: 0o666)
    }

    /// Accepts connections on a thread of its own until ``stop()``; each is served on its own.
    func start() {
        let thread = Thread { [self] in
            while let connection = try? listener.accept() {
                let worker = Thread { self.serve(connection) }
                worker.name = "guardian-client"
                worker.start()
            }
        }
        thread.name = "guardian-socket"
        thread.start()
    }

    func stop() {
        _ = shutdown(listener.descriptor, Int32(SHUT_RDWR))
        unlink(paths.socket)
    }

    /// Who `peer` is to this service; nil for anyone else.
    func role(of peer: LocalSocket.Peer) -> GuardianRole? {
        if peer.uid == 0 { return .guardian }
        if peer.uid == childUID { return .child }
        return GuardianPaths.isGuardian(uid: peer.uid) ? .guardian : nil
    }

    func serve(_ connection: LocalSocket) {
        defer { connection.close() }
        guard let peer = try? connection.peer() else { return }
        guard let role = role(of: peer) else {
            logger.warning("refused a connection from uid \(peer.uid) (pid \(peer.pid)): neither \(paths.user) nor a guardian")
            // The request is read first: closing with it unread would reset the connection.
            _ = try? connection.receive()
            try? connection.send(GuardianResponse.refused("this service protects \(paths.user); only \(paths.user), root and members of \(GuardianPaths.guardiansGroup) may use it").encoded())
            return
        }
        while let message = try? connection.receive() {
            message.descriptors.forEach { close($0) }
            let (response, preview) = handle(message.bytes, role: role, peer: peer)
            defer { if let preview { close(preview) } }
            do { try connection.send(response.encoded(), descriptors: preview.map { [$0] } ?? []) } catch { return }
        }
    }

    /// The review in force, acting as `role`.
    func review(_ role: GuardianRole, peer: LocalSocket.Peer) -> Review {
        let configured: Result<AnalysisMode, Settings.ConfigurationError> = Result { () throws(Settings.ConfigurationError) in
            try ConfigurationFile.load(configurationPath).settings.mode
        }
        let recorded = (try? vault.store.recordedMode())??.mode
        let mode = ModeInForce.resolve(configuration: configured, recorded: recorded, runningAgent: nil)
        let actor = role == .guardian ? "guardian (uid \(peer.uid))" : paths.user
        return Review(vault: vault, mode: mode, actor: actor)
    }

    func handle(_ bytes: [UInt8], role: GuardianRole, peer: LocalSocket.Peer) -> (GuardianResponse, Int32?) {
        guard let request = try? GuardianRequest.decode(bytes) else { return (.refused("not a request this service understands"), nil) }
        let review = review(role, peer: peer)
        var response = GuardianResponse()
        response.user = paths.user
        response.role = role
        response.mode = review.mode.mode
        response.pinIsSet = review.pinIsSet
        func guardianOnly() -> GuardianResponse? {
            role == .guardian ? nil : .refused("only a guardian can do this (root, or a member of \(GuardianPaths.guardiansGroup)); ask a grown-up")
        }
        func consent(_ action: ProtectedAction) throws -> Review.Consent {
            if role == .guardian { return review.guardianConsent(to: action) }
            return try review.consent(to: action, confirmed: true, pin: request.pin)
        }
        do {
            switch request.verb {
            case .hello:
                break
            case .status:
                response.status = try vault.store.agentStatus()
            case .list:
                response.items = try review.items(includeClosed: request.all ?? false)
                response.requests = try review.releaseRequests().mapValues(\.requestedAt)
            case .show:
                guard let id = request.id, let item = try review.item(id) else { return (.refused("there is no item \(request.id ?? 0)"), nil) }
                response.items = [item]
                response.events = try review.history(of: id)
                response.requests = try review.releaseRequests().filter { $0.key == id }.mapValues(\.requestedAt)
                // The blurred preview, as an open descriptor: the child cannot open the vault.
                if let preview = review.preview(of: item) {
                    let fd = open(preview, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
                    if fd >= 0 { response.hasPreview = true; return (response, fd) }
                }
            case .history:
                if let refusal = guardianOnly() { return (refusal, nil) }
                response.events = try review.history()
            case .release:
                guard let id = request.id else { return (.refused("which item?"), nil) }
                let result = try review.release(id, consent: try consent(.release))
                logger.notice("item \(id) released to \(result.path) by \(review.actor)")
                response.path = result.path
                response.renamed = result.renamed
            case .block:
                guard let id = request.id else { return (.refused("which item?"), nil) }
                let result = try review.block(id, keep: request.keep ?? false, origin: request.origin ?? false, consent: try consent(.block))
                logger.notice("item \(id) blocked by \(review.actor)")
                response.deleted = result.deleted
                response.blockedHost = result.blockedHost
            case .ask:
                guard let id = request.id else { return (.refused("which item?"), nil) }
                try review.requestRelease(id)
                logger.notice("\(paths.user) asks for item \(id) back")
            case .mode:
                guard let mode = request.mode, mode != review.mode.mode else { break }
                if let refusal = guardianOnly() { return (refusal, nil) }
                let file = try ConfigurationFile.load(configurationPath)
                try review.changeMode(to: mode, in: file, consent: review.guardianConsent(to: mode == .child ? .enterChildMode : .leaveChildMode))
                logger.notice("mode changed to \(mode.rawValue) by \(review.actor)")
                response.mode = mode
                reload()
            case .watch:
                if let refusal = guardianOnly() { return (refusal, nil) }
                guard let folder = request.folder else { return (.refused("which folder?"), nil) }
                // Relative to the protected account's home; only its home is visible to the service.
                let environment = ["HOME": home]
                let absolute = WatchSettings.expand(folder.hasPrefix("/") || folder.hasPrefix("~") ? folder : "~/" + folder, environment: environment)
                guard absolute == home || absolute.hasPrefix(home + "/") else {
                    return (.refused("\(absolute) is outside \(paths.user)'s home (\(home)); the service watches folders there only"), nil)
                }
                let file = try ConfigurationFile.load(configurationPath)
                let result = try file.editWatch(request.remove == true ? .remove(absolute) : .add(absolute, outgoing: request.outgoing ?? false), environment: environment)
                if result.changed {
                    logger.notice("\(request.remove == true ? "no longer watching" : "watching") \(absolute) (by \(review.actor))")
                    response.path = absolute
                    reload()
                }
            case .setPIN:
                if let refusal = guardianOnly() { return (refusal, nil) }
                guard let pin = request.pin, GuardianPIN.isValid(pin) else { return (.refused("a PIN is 4 to 12 digits; nothing changed"), nil) }
                try GuardianPIN(store: vault.store).set(pin)
                try vault.store.record(.guardian, mode: review.mode.mode, actor: review.actor, detail: "guardian PIN set")
                response.pinIsSet = true
            }
        } catch let refusal as Review.Refusal {
            switch refusal {
            case .wrongPIN(let wait): response.refusal = .wrongPIN(wait: wait)
            case .waitForPIN(let until): response.refusal = .waitForPIN(until: until)
            case .notConfirmed: response.refusal = .refused("not confirmed")
            case .refused(let words): response.refusal = .refused(words)
            }
        } catch {
            response.refusal = .refused("\(error)")
        }
        return (response, nil)
    }
}
