import Foundation
import QuarantineAgent
import GuardianAPI
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis
import ServiceSupport

/// One request being served: who asked (the kernel's word) and the review that decides it.
struct GuardianContext {
    let role: GuardianRole
    let peer: LocalSocket.Peer
    let review: Review

    var caller: GuardianCaller { role.caller }
}

/// What a handler gives back: its verb's answer, a descriptor to pass with it (the preview), and
/// what changed in what every answer's header says (a new mode, a PIN set).
struct Served<Answer> {
    var answer: Answer
    var preview: Int32? = nil
    var mode: AnalysisMode? = nil
    var pinIsSet: Bool? = nil
}

/// One verb's entry in the route table (USBGuard's way: each handler is registered with the
/// access it needs, and ``GuardianRules`` checks it once, before the handler, never inside it).
struct GuardianRoute: Sendable {
    let verb: GuardianVerb
    let access: GuardianAccess
    /// Reads the verb's request from the message, runs its handler, encodes its answer.
    let serve: @Sendable (GuardianServer, GuardianContext, [UInt8]) -> (bytes: [UInt8], preview: Int32?)

    /// The route of `Request`'s verb: `handler` gets the request decoded as its own type (a
    /// malformed one is answered with the typed error) and throws the core's refusals.
    static func to<Request: GuardianRequest>(_ type: Request.Type, access: GuardianAccess,
                                             _ handler: @escaping @Sendable (GuardianServer, GuardianContext, Request) throws -> Served<Request.Answer>) -> GuardianRoute {
        GuardianRoute(verb: Request.verb, access: access) { server, context, bytes in
            let request: Request
            do throws(GuardianProtocolError) { request = try GuardianProtocol.decode(Request.self, from: bytes) } catch {
                return (GuardianProtocol.encode(server.answer(context, Request.self, nil, refusal: .invalid(error))), nil)
            }
            do {
                let served = try handler(server, context, request)
                var answer = server.answer(context, Request.self, served.answer)
                if let mode = served.mode { answer.mode = mode }
                if let pinIsSet = served.pinIsSet { answer.pinIsSet = pinIsSet }
                return (GuardianProtocol.encode(answer), served.preview)
            } catch {
                return (GuardianProtocol.encode(server.answer(context, Request.self, nil, refusal: GuardianServer.refusal(for: error))), nil)
            }
        }
    }
}

extension GuardianRole {
    /// The core's name for this caller.
    var caller: GuardianCaller { self == .child ? .protectedAccount : .guardian }
}

extension GuardianServer {
    // MARK: - The route table

    /// Every verb, the access it declares, and its handler; one entry each.
    static let routes: [GuardianVerb: GuardianRoute] = Dictionary(uniqueKeysWithValues: [
        GuardianRoute.to(GuardianWire.Hello.self, access: .anyone) { server, context, _ in Served(answer: server.hello(context)) },
        GuardianRoute.to(GuardianWire.Status.self, access: .anyone) { server, _, _ in
            Served(answer: .init(status: try server.vault.store.agentStatus().map(GuardianWire.ServiceStatus.init)))
        },
        GuardianRoute.to(GuardianWire.List.self, access: .anyone) { server, context, request in try server.list(context, request) },
        GuardianRoute.to(GuardianWire.Show.self, access: .anyone) { server, context, request in try server.show(context, request) },
        GuardianRoute.to(GuardianWire.History.self, access: .guardian) { server, context, request in try server.history(context, request) },
        GuardianRoute.to(GuardianWire.Release.self, access: .anyone) { server, context, request in try server.release(context, request) },
        GuardianRoute.to(GuardianWire.Block.self, access: .anyone) { server, context, request in try server.block(context, request) },
        GuardianRoute.to(GuardianWire.Ask.self, access: .protectedAccount) { server, context, request in try server.ask(context, request) },
        GuardianRoute.to(GuardianWire.Mode.self, access: .guardian) { server, context, request in try server.changeMode(context, request) },
        GuardianRoute.to(GuardianWire.Watch.self, access: .guardian) { server, context, request in try server.watch(context, request) },
        GuardianRoute.to(GuardianWire.SetPIN.self, access: .guardian) { server, context, request in try server.setPIN(context, request) },
    ].map { ($0.verb, $0) })

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
        return route.serve(self, GuardianContext(role: role, peer: peer, review: review(role, peer: peer)), bytes)
    }

    /// An answer to `Request` for `context`'s caller: the header every answer has, and `body`.
    func answer<Request: GuardianRequest>(_ context: GuardianContext, _ type: Request.Type, _ body: Request.Answer?,
                                          refusal: GuardianRefusal? = nil) -> GuardianAnswer<Request.Answer> {
        GuardianAnswer(verb: Request.verb, user: paths.user, role: context.role, mode: context.review.mode.mode, pinIsSet: context.review.pinIsSet,
                       refusal: refusal, answer: body)
    }

    /// What a handler threw, as the caller is told it.
    static func refusal(for error: Error) -> GuardianRefusal {
        switch error {
        case let refusal as Review.Refusal:
            switch refusal {
            case .wrongPIN(let wait): return .wrongPIN(wait: wait)
            case .waitForPIN(let until): return .waitForPIN(until: until)
            case .notConfirmed: return .refused("not confirmed")
            case .refused(let words): return .refused(words)
            }
        case let refusal as GuardianRefusal: return refusal
        default: return .refused("\(error)")
        }
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

    // MARK: - Handlers (no access checks here: the route table declared them, GuardianRules checked them)

    func hello(_ context: GuardianContext) -> GuardianWire.Hello.Answer {
        .init(verbs: GuardianVerb.allCases.filter { verb in
            Self.routes[verb].map { GuardianRules.access($0.access, for: context.caller, protectedAccount: paths.user) == .none } ?? false
        })
    }

    func list(_ context: GuardianContext, _ request: GuardianWire.List) throws -> Served<GuardianWire.List.Answer> {
        let items = shown(try context.review.items(includeClosed: request.all).compactMap(GuardianWire.Item.init))
        let requests = try context.review.releaseRequests().mapValues(\.requestedAt)
        return Served(answer: try page(items, id: \.id, request: request, context: context) { entries, more, next in
            let ids = Set(entries.map(\.id))
            return .init(items: entries, requests: requests.filter { ids.contains($0.key) }, more: more, next: next)
        })
    }

    func show(_ context: GuardianContext, _ request: GuardianWire.Show) throws -> Served<GuardianWire.Show.Answer> {
        guard let stored = try context.review.item(request.id), let item = GuardianWire.Item(stored).map({ shown([$0])[0] }) else {
            throw GuardianRefusal.refused("there is no item \(request.id)")
        }
        let requestedAt = try context.review.releaseRequests()[request.id]?.requestedAt
        let events = shown(try context.review.history(of: request.id).compactMap(GuardianWire.Event.init))
        var served = Served(answer: try page(events, id: \.id, request: request, context: context) { entries, more, next in
            .init(item: item, requestedAt: requestedAt, events: entries, hasPreview: false, more: more, next: next)
        })
        // The blurred preview, as an open descriptor (the child cannot open the vault), with the
        // first page only.
        if request.before == nil, let fd = context.review.openPreview(of: stored) {
            served.answer.hasPreview = true
            served.preview = fd
        }
        return served
    }

    func history(_ context: GuardianContext, _ request: GuardianWire.History) throws -> Served<GuardianWire.History.Answer> {
        let events = shown(try context.review.history().compactMap(GuardianWire.Event.init))
        return Served(answer: try page(events, id: \.id, request: request, context: context) { .init(events: $0, more: $1, next: $2) })
    }

    func release(_ context: GuardianContext, _ request: GuardianWire.Release) throws -> Served<GuardianWire.Release.Answer> {
        let consent = try context.review.consent(to: .release, by: context.caller, pin: request.pin)
        let result = try context.review.release(request.id, consent: consent)
        let path = SharedFolder.shown(result.path, in: sharedFolders)
        logger.notice("item \(request.id) released to \(path) by \(context.review.actor)")
        return Served(answer: .init(path: path, renamed: result.renamed))
    }

    func block(_ context: GuardianContext, _ request: GuardianWire.Block) throws -> Served<GuardianWire.Block.Answer> {
        let consent = try context.review.consent(to: .block, by: context.caller, pin: request.pin)
        let result = try context.review.block(request.id, keep: request.keep, origin: request.origin, consent: consent)
        logger.notice("item \(request.id) blocked by \(context.review.actor)")
        return Served(answer: .init(deleted: result.deleted, blockedHost: result.blockedHost))
    }

    func ask(_ context: GuardianContext, _ request: GuardianWire.Ask) throws -> Served<GuardianWire.Nothing> {
        try context.review.requestRelease(request.id)
        logger.notice("\(paths.user) asks for item \(request.id) back")
        return Served(answer: .init())
    }

    func changeMode(_ context: GuardianContext, _ request: GuardianWire.Mode) throws -> Served<GuardianWire.Mode.Answer> {
        guard request.mode != context.review.mode.mode else { return Served(answer: .init(changed: false)) }
        let file = try ConfigurationFile.loadExisting(configurationPath)
        let consent = try context.review.consent(to: request.mode == .child ? .enterChildMode : .leaveChildMode, by: context.caller, pin: nil)
        try context.review.changeMode(to: request.mode, in: file, consent: consent)
        logger.notice("mode changed to \(request.mode.rawValue) by \(context.review.actor)")
        reload()
        return Served(answer: .init(changed: true), mode: request.mode)
    }

    func watch(_ context: GuardianContext, _ request: GuardianWire.Watch) throws -> Served<GuardianWire.Watch.Answer> {
        // Relative to the protected account's home; only its home is visible to the service.
        let environment = ["HOME": home]
        let folder = request.folder
        let absolute = WatchSettings.expand(folder.hasPrefix("/") || folder.hasPrefix("~") ? folder : "~/" + folder, environment: environment)
        guard absolute == home || absolute.hasPrefix(home + "/") else {
            throw GuardianRefusal.refused("\(absolute) is outside \(paths.user)'s home (\(home)); the service watches folders there only")
        }
        let file = try ConfigurationFile.loadExisting(configurationPath)
        let result = try file.editWatch(request.remove ? .remove(absolute) : .add(absolute, outgoing: request.outgoing), environment: environment)
        guard result.changed else { return Served(answer: .init(path: nil)) }
        logger.notice("\(request.remove ? "no longer watching" : "watching") \(absolute) (by \(context.review.actor))")
        reload()
        return Served(answer: .init(path: absolute))
    }

    func setPIN(_ context: GuardianContext, _ request: GuardianWire.SetPIN) throws -> Served<GuardianWire.Nothing> {
        guard GuardianPIN.isValid(request.pin) else { throw GuardianRefusal.refused("a PIN is 4 to 12 digits; nothing changed") }
        try GuardianPIN(store: vault.store).set(request.pin)
        try vault.store.record(.guardian, mode: context.review.mode.mode, actor: context.review.actor, detail: "guardian PIN set")
        return Served(answer: .init(), pinIsSet: true)
    }

    // MARK: - Pages

    /// One page of `all` (newest first, by id) as `Request`'s answer, made by `make` from the
    /// entries, whether more follow and where they start: the entries below the request's
    /// cursor, at most its limit, and fewer while the encoded answer would be over
    /// ``GuardianProtocol/maxMessage``.
    func page<Entry, Request: GuardianPagedRequest>(_ all: [Entry], id: KeyPath<Entry, Int64>, request: Request, context: GuardianContext,
                                                    make: ([Entry], Bool, Int64?) -> Request.Answer) throws -> Request.Answer {
        let after = request.before.map { before in all.drop { $0[keyPath: id] >= before } } ?? all[...]
        var count = min(max(request.limit ?? GuardianProtocol.defaultPage, 1), GuardianProtocol.maxPage, after.count)
        // Room for the paging fields' largest values.
        let budget = GuardianProtocol.maxMessage - 256
        while true {
            let entries = Array(after.prefix(count))
            let more = count < after.count
            let candidate = make(entries, more, more ? entries.last?[keyPath: id] : nil)
            if GuardianProtocol.encode(answer(context, Request.self, candidate)).count <= budget || count == 0 {
                if count == 0 && !after.isEmpty { throw GuardianRefusal.refused("an entry is too long to send") }
                return candidate
            }
            count /= 2
        }
    }
}

extension GuardianServer {
    // MARK: - Paths as people know them

    /// Items with their original paths named as people know them (`/tmp/...`, not the side path
    /// the service reaches the host's `/tmp` by).
    func shown(_ items: [GuardianWire.Item]) -> [GuardianWire.Item] {
        guard sharedFolders.contains(where: { $0.reachedAt != $0.path }) else { return items }
        return items.map { item in
            var item = item
            item.originalPath = SharedFolder.shown(item.originalPath, in: sharedFolders)
            return item
        }
    }

    /// History events with their paths and details named as people know them.
    func shown(_ events: [GuardianWire.Event]) -> [GuardianWire.Event] {
        guard sharedFolders.contains(where: { $0.reachedAt != $0.path }) else { return events }
        return events.map { event in
            var event = event
            event.path = event.path.map { SharedFolder.shown($0, in: sharedFolders) }
            event.detail = event.detail.map { SharedFolder.shownText($0, in: sharedFolders) }
            return event
        }
    }
}
