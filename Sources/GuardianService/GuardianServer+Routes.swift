import Foundation
import QuarantineAgent
import GuardianAPI
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis
import ServiceSupport

/// Who may use a verb of the guardian service (USBGuard's way: each handler is registered with
/// the access it needs, and the check is made once, before the handler, never inside it).
enum GuardianAccess: Sendable, Equatable {
    /// Anyone the service admits: the protected account and its guardians.
    case anyone
    /// The protected account only.
    case child
    /// Root and members of `quarantine-guardians` only.
    case guardian

    func admits(_ role: GuardianRole) -> Bool {
        switch self {
        case .anyone: true
        case .child: role == .child
        case .guardian: role == .guardian
        }
    }
}

/// One request being served: what was asked, by whom, and the review that decides it.
struct GuardianCall {
    let request: GuardianRequest
    let role: GuardianRole
    let peer: LocalSocket.Peer
    let review: Review
}

/// One verb's entry in the route table: the access it needs and its handler. A handler fills in
/// the answer (which already says who asked, the mode and whether a PIN is set) and may return a
/// descriptor to pass with it (the preview); it throws the core's refusals.
struct GuardianRoute: Sendable {
    let access: GuardianAccess
    let handler: @Sendable (GuardianServer, GuardianCall, inout GuardianResponse) throws -> Int32?
}

extension GuardianServer {
    // MARK: - The route table

    /// Every verb, its access and its handler. `mode` without a mode only shows it, so it is
    /// served as `hello` (every answer says the mode); with one it changes it: a guardian's.
    static let routes: [GuardianRequest.Verb: GuardianRoute] = [
        .hello: GuardianRoute(access: .anyone) { _, _, _ in nil },
        .status: GuardianRoute(access: .anyone) { server, _, response in
            response.status = try server.vault.store.agentStatus()
            return nil
        },
        .list: GuardianRoute(access: .anyone) { server, call, response in try server.list(call, &response) },
        .show: GuardianRoute(access: .anyone) { server, call, response in try server.show(call, &response) },
        .history: GuardianRoute(access: .guardian) { server, call, response in try server.history(call, &response) },
        .release: GuardianRoute(access: .anyone) { server, call, response in try server.release(call, &response) },
        .block: GuardianRoute(access: .anyone) { server, call, response in try server.block(call, &response) },
        .ask: GuardianRoute(access: .child) { server, call, _ in try server.ask(call) },
        .mode: GuardianRoute(access: .guardian) { server, call, response in try server.changeMode(call, &response) },
        .watch: GuardianRoute(access: .guardian) { server, call, response in try server.watch(call, &response) },
        .setPIN: GuardianRoute(access: .guardian) { server, call, response in try server.setPIN(call, &response) },
    ]

    /// The route a request takes (see ``routes``).
    static func routeVerb(of request: GuardianRequest) -> GuardianRequest.Verb {
        request.verb == .mode && request.mode == nil ? .hello : request.verb
    }

    /// Words for a caller refused by a route's access.
    func refusal(for access: GuardianAccess) -> String {
        switch access {
        case .anyone: "refused"
        case .child: "only \(paths.user) can do this"
        case .guardian: "only a guardian can do this (root, or a member of \(GuardianPaths.guardiansGroup)); ask a grown-up"
        }
    }

    /// Decodes `bytes`, checks the route's access for `role`, runs its handler.
    func respond(to bytes: [UInt8], role: GuardianRole, peer: LocalSocket.Peer) -> (GuardianResponse, Int32?) {
        guard let request = try? GuardianRequest.decode(bytes) else { return (.refused("not a request this service understands"), nil) }
        guard let route = Self.routes[Self.routeVerb(of: request)] else { return (.refused("not a request this service understands"), nil) }
        guard route.access.admits(role) else { return (.refused(refusal(for: route.access)), nil) }
        let review = review(role, peer: peer)
        var response = GuardianResponse()
        response.user = paths.user
        response.role = role
        response.mode = review.mode.mode
        response.pinIsSet = review.pinIsSet
        do {
            let preview = try route.handler(self, GuardianCall(request: request, role: role, peer: peer, review: review), &response)
            return (response, preview)
        } catch let refusal as Review.Refusal {
            switch refusal {
            case .wrongPIN(let wait): response.refusal = .wrongPIN(wait: wait)
            case .waitForPIN(let until): response.refusal = .waitForPIN(until: until)
            case .notConfirmed: response.refusal = .refused("not confirmed")
            case .refused(let words): response.refusal = .refused(words)
            }
        } catch let refusal as GuardianResponse.Refusal {
            response.refusal = refusal
        } catch {
            response.refusal = .refused("\(error)")
        }
        return (response, nil)
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

    // MARK: - Handlers (no access checks here: the route table made them)

    func list(_ call: GuardianCall, _ response: inout GuardianResponse) throws -> Int32? {
        let all = try call.review.items(includeClosed: call.request.all ?? false)
        let requests = try call.review.releaseRequests().mapValues(\.requestedAt)
        try page(all, id: \.id, request: call.request, into: &response) { response, items in
            response.items = shown(items)
            let ids = Set(items.compactMap(\.id))
            response.requests = requests.filter { ids.contains($0.key) }
        }
        return nil
    }

    func show(_ call: GuardianCall, _ response: inout GuardianResponse) throws -> Int32? {
        guard let id = call.request.id, let item = try call.review.item(id) else {
            throw GuardianResponse.Refusal.refused("there is no item \(call.request.id ?? 0)")
        }
        response.items = shown([item])
        response.requests = try call.review.releaseRequests().filter { $0.key == id }.mapValues(\.requestedAt)
        try page(try call.review.history(of: id), id: \.id, request: call.request, into: &response) { $0.events = shown($1) }
        // The blurred preview, as an open descriptor (the child cannot open the vault), with the
        // first page only.
        if call.request.before == nil, let preview = call.review.preview(of: item) {
            let fd = open(preview, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            if fd >= 0 { response.hasPreview = true; return fd }
        }
        return nil
    }

    func history(_ call: GuardianCall, _ response: inout GuardianResponse) throws -> Int32? {
        try page(try call.review.history(), id: \.id, request: call.request, into: &response) { $0.events = shown($1) }
        return nil
    }

    func release(_ call: GuardianCall, _ response: inout GuardianResponse) throws -> Int32? {
        guard let id = call.request.id else { throw GuardianResponse.Refusal.refused("which item?") }
        let result = try call.review.release(id, consent: try consent(call, to: .release))
        let path = SharedFolder.shown(result.path, in: sharedFolders)
        logger.notice("item \(id) released to \(path) by \(call.review.actor)")
        response.path = path
        response.renamed = result.renamed
        return nil
    }

    func block(_ call: GuardianCall, _ response: inout GuardianResponse) throws -> Int32? {
        guard let id = call.request.id else { throw GuardianResponse.Refusal.refused("which item?") }
        let result = try call.review.block(id, keep: call.request.keep ?? false, origin: call.request.origin ?? false, consent: try consent(call, to: .block))
        logger.notice("item \(id) blocked by \(call.review.actor)")
        response.deleted = result.deleted
        response.blockedHost = result.blockedHost
        return nil
    }

    func ask(_ call: GuardianCall) throws -> Int32? {
        guard let id = call.request.id else { throw GuardianResponse.Refusal.refused("which item?") }
        try call.review.requestRelease(id)
        logger.notice("\(paths.user) asks for item \(id) back")
        return nil
    }

    func changeMode(_ call: GuardianCall, _ response: inout GuardianResponse) throws -> Int32? {
        guard let mode = call.request.mode, mode != call.review.mode.mode else { return nil }
        let file = try ConfigurationFile.load(configurationPath)
        try call.review.changeMode(to: mode, in: file, consent: call.review.guardianConsent(to: mode == .child ? .enterChildMode : .leaveChildMode))
        logger.notice("mode changed to \(mode.rawValue) by \(call.review.actor)")
        response.mode = mode
        reload()
        return nil
    }

    func watch(_ call: GuardianCall, _ response: inout GuardianResponse) throws -> Int32? {
        guard let folder = call.request.folder else { throw GuardianResponse.Refusal.refused("which folder?") }
        // Relative to the protected account's home; only its home is visible to the service.
        let environment = ["HOME": home]
        let absolute = WatchSettings.expand(folder.hasPrefix("/") || folder.hasPrefix("~") ? folder : "~/" + folder, environment: environment)
        guard absolute == home || absolute.hasPrefix(home + "/") else {
            throw GuardianResponse.Refusal.refused("\(absolute) is outside \(paths.user)'s home (\(home)); the service watches folders there only")
        }
        let file = try ConfigurationFile.load(configurationPath)
        let remove = call.request.remove == true
        let result = try file.editWatch(remove ? .remove(absolute) : .add(absolute, outgoing: call.request.outgoing ?? false), environment: environment)
        if result.changed {
            logger.notice("\(remove ? "no longer watching" : "watching") \(absolute) (by \(call.review.actor))")
            response.path = absolute
            reload()
        }
        return nil
    }

    func setPIN(_ call: GuardianCall, _ response: inout GuardianResponse) throws -> Int32? {
        guard let pin = call.request.pin, GuardianPIN.isValid(pin) else { throw GuardianResponse.Refusal.refused("a PIN is 4 to 12 digits; nothing changed") }
        try GuardianPIN(store: vault.store).set(pin)
        try vault.store.record(.guardian, mode: call.review.mode.mode, actor: call.review.actor, detail: "guardian PIN set")
        response.pinIsSet = true
        return nil
    }

    /// The consent `call`'s caller gives: a guardian's is theirs; the child's is the PIN's.
    func consent(_ call: GuardianCall, to action: ProtectedAction) throws -> Review.Consent {
        if call.role == .guardian { return call.review.guardianConsent(to: action) }
        return try call.review.consent(to: action, confirmed: true, pin: call.request.pin)
    }

    // MARK: - Pages

    /// Puts one page of `all` (newest first, by id) into `response` with `fill`: the entries
    /// below the request's cursor, at most its limit, and fewer while the encoded answer would
    /// be over ``GuardianProtocol/maxMessage``; says whether more follow and where they start.
    func page<Entry>(_ all: [Entry], id: KeyPath<Entry, Int64?>, request: GuardianRequest, into response: inout GuardianResponse,
                     fill: (inout GuardianResponse, [Entry]) -> Void) throws {
        let after = request.before.map { before in all.drop { ($0[keyPath: id] ?? .max) >= before } } ?? all[...]
        var count = min(max(request.limit ?? GuardianProtocol.defaultPage, 1), GuardianProtocol.maxPage, after.count)
        // Room for the rest of the answer and the paging fields.
        let budget = GuardianProtocol.maxMessage - 256
        while true {
            let entries = Array(after.prefix(count))
            var candidate = response
            fill(&candidate, entries)
            candidate.more = count < after.count
            candidate.next = candidate.more == true ? entries.last?[keyPath: id] : nil
            if candidate.encoded().count <= budget || count == 0 {
                if count == 0 && !after.isEmpty { throw GuardianResponse.Refusal.refused("an entry is too long to send") }
                response = candidate
                return
            }
            count /= 2
        }
    }
}

extension GuardianServer {
    // MARK: - Paths as people know them

    /// Items with their original paths named as people know them (`/tmp/...`, not the side path
    /// the service reaches the host's `/tmp` by).
    func shown(_ items: [VaultItem]) -> [VaultItem] {
        guard sharedFolders.contains(where: { $0.reachedAt != $0.path }) else { return items }
        return items.map { item in
            var item = item
            item.originalPath = SharedFolder.shown(item.originalPath, in: sharedFolders)
            return item
        }
    }

    /// History events with their paths and details named as people know them.
    func shown(_ events: [AuditEvent]) -> [AuditEvent] {
        guard sharedFolders.contains(where: { $0.reachedAt != $0.path }) else { return events }
        return events.map { event in
            var event = event
            event.path = event.path.map { SharedFolder.shown($0, in: sharedFolders) }
            event.detail = event.detail.map { SharedFolder.shownText($0, in: sharedFolders) }
            return event
        }
    }
}
