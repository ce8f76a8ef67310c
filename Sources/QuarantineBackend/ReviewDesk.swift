import Foundation
import GuardianAPI
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis

/// Where one request is served, for either backend: who asks, the review in force, where the
/// configuration is. Each handler is one call into the core (``Review``); no handler checks
/// access (the route table declares it, ``GuardianRules`` checks it at a guardian service).
public struct ReviewDesk: Sendable {
    /// The review in force, acting for the caller.
    public let review: Review
    /// The account whose vault this is.
    public let account: String
    /// The caller's role at a guardian service; nil locally (the account's own person).
    public let role: GuardianRole?
    public let configurationPath: String?
    /// The account's environment (its home: `~` and relative folders).
    public let environment: [String: String]
    /// Only folders below it may be watched (a guardian service: the protected account's home).
    public let watchWithin: String?
    /// Whether answers come in pages that fit one socket message (a guardian service); locally
    /// one answer holds everything.
    public let paged: Bool
    /// Paths and texts as people know them (a service reaches `/tmp` by a side path).
    public let shownPath: @Sendable (String) -> String
    public let shownText: @Sendable (String) -> String
    /// Tells the agent to re-read the configuration; words on what happened, if any.
    public let reload: @Sendable () -> String?
    /// What the agent publishes: whether it runs, its pid, its last status.
    public let agentState: @Sendable (Vault) -> (running: Bool, pid: Int32?, status: AgentStatus?)
    /// A line for the service's log (locally: nothing).
    public let log: @Sendable (String) -> Void

    public init(review: Review, account: String, role: GuardianRole?, configurationPath: String?, environment: [String: String],
                watchWithin: String? = nil, paged: Bool = false,
                shownPath: @escaping @Sendable (String) -> String = { $0 }, shownText: @escaping @Sendable (String) -> String = { $0 },
                reload: @escaping @Sendable () -> String?, agentState: @escaping @Sendable (Vault) -> (running: Bool, pid: Int32?, status: AgentStatus?),
                log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.review = review
        self.account = account
        self.role = role
        self.configurationPath = configurationPath
        self.environment = environment
        self.watchWithin = watchWithin
        self.paged = paged
        self.shownPath = shownPath
        self.shownText = shownText
        self.reload = reload
        self.agentState = agentState
        self.log = log
    }

    var vault: Vault { review.vault }

    /// The core's name for the caller.
    public var caller: GuardianCaller { role == .guardian ? .guardian : .protectedAccount }

    /// An answer to `Request` for this caller: the header every answer has, and `body`.
    public func answer<Request: GuardianRequest>(_ type: Request.Type, _ body: Request.Answer?, refusal: GuardianRefusal? = nil) -> GuardianAnswer<Request.Answer> {
        GuardianAnswer(verb: Request.verb, user: account, role: role, mode: review.mode.mode, pinIsSet: review.pinIsSet, refusal: refusal, answer: body)
    }

    /// What a handler threw, as the caller is told it: the core's refusals as they are, a
    /// failure (no such item, a file that could not be moved) as ``GuardianRefusal/failed(_:)``.
    public static func refusal(for error: Error) -> GuardianRefusal {
        switch error {
        case let refusal as Review.Refusal:
            switch refusal {
            case .wrongPIN(let wait): return .wrongPIN(wait: wait)
            case .waitForPIN(let until): return .waitForPIN(until: until)
            case .notConfirmed: return .refused("not confirmed")
            case .refused(let words): return .refused(words)
            }
        case let refusal as GuardianRefusal: return refusal
        default: return .failed("\(error)")
        }
    }

    /// The configuration file, or the failure naming what is wrong with it. A guardian
    /// service's must exist (a missing file's defaults are adult mode).
    func configuration() throws -> ConfigurationFile {
        do {
            if role != nil, let configurationPath { return try ConfigurationFile.loadExisting(configurationPath) }
            return try ConfigurationFile.load(configurationPath, environment: environment)
        } catch {
            throw GuardianRefusal.failed("\(error)")
        }
    }

    // MARK: - Seeing

    func hello() -> GuardianWire.Hello.Answer {
        .init(verbs: GuardianVerb.allCases.filter { verb in
            guard let route = BackendRoute.table[verb] else { return false }
            return role == nil || GuardianRules.access(route.access, for: caller, protectedAccount: account) == .none
        }, modeNote: review.mode.note)
    }

    func status() throws -> GuardianWire.Status.Answer {
        let agent = agentState(vault)
        let waiting = (try? vault.store.backlogCount()) ?? agent.status?.queueDepth ?? 0
        var last = agent.status
        if !agent.running { last?.inFlight = [] }
        return .init(status: last.map(GuardianWire.ServiceStatus.init), running: agent.running, pid: agent.pid, waiting: waiting, agent: last)
    }

    func list(_ request: GuardianWire.List) throws -> Served<GuardianWire.List.Answer> {
        let items = shown(try review.items(includeClosed: request.all, before: request.before, limit: pageReadLimit(request)).compactMap(GuardianWire.Item.init))
        let requests = try review.releaseRequests().mapValues(\.requestedAt)
        return Served(answer: try page(items, id: \.id, request: request) { entries, more, next in
            let ids = Set(entries.map(\.id))
            return .init(items: entries, requests: requests.filter { ids.contains($0.key) }, more: more, next: next)
        })
    }

    func show(_ request: GuardianWire.Show) throws -> Served<GuardianWire.Show.Answer> {
        guard let stored = try review.item(request.id), let item = GuardianWire.Item(stored).map({ shown([$0])[0] }) else {
            throw GuardianRefusal.failed("there is no item \(request.id); see 'quarantine list --all'")
        }
        let requestedAt = try review.releaseRequests()[request.id]?.requestedAt
        let events = try history(of: request.id, request: request)
        var served = Served(answer: try page(events, id: \.id, request: request) { entries, more, next in
            .init(item: item, requestedAt: requestedAt, events: entries, hasPreview: false, more: more, next: next)
        })
        guard request.before == nil else { return served }
        if role == nil {
            // The person's own vault: the preview's path, and the file opened (never the original).
            if let path = review.preview(of: stored) {
                served.answer.previewPath = path
                let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
                if fd >= 0 {
                    served.preview = fd
                    served.answer.hasPreview = true
                }
            }
        } else if let fd = review.openPreview(of: stored) {
            // A guardian service: an open descriptor (the child cannot open the vault), with
            // the first page only.
            served.answer.hasPreview = true
            served.preview = fd
        }
        return served
    }

    func history(_ request: GuardianWire.History) throws -> Served<GuardianWire.History.Answer> {
        let events = try history(of: nil, request: request)
        return Served(answer: try page(events, id: \.id, request: request) { .init(events: $0, more: $1, next: $2) })
    }

    func watchList() throws -> GuardianWire.WatchList.Answer {
        let settings = try configuration().settings
        let active = Set(settings.watch.roots(mode: settings.mode, environment: environment).map(\.path))
        let folders = settings.watch.roots(mode: .child, environment: environment).map { root in
            GuardianWire.WatchList.Answer.Folder(path: root.path, direction: root.direction.rawValue, active: active.contains(root.path),
                                                 exists: FileManager.default.fileExists(atPath: root.path),
                                                 isDefault: settings.watch.incoming == nil && root.direction == .incoming)
        }
        return .init(mode: settings.mode, defaultDownloadFolder: settings.watch.incoming == nil, folders: folders)
    }

    func count() throws -> GuardianWire.Count.Answer {
        let counts = try review.counts()
        return .init(byStatus: counts.byStatus, inVault: counts.inVault, askedBack: counts.askedBack)
    }

    // MARK: - Acting

    func release(_ request: GuardianWire.Release) throws -> Served<GuardianWire.Release.Answer> {
        if request.to != nil && role != nil { throw GuardianRefusal.refused("a guardian service puts files back where they were (no --to)") }
        let consent = try review.consent(to: .release, by: caller, pin: request.pin)
        let result = try review.release(request.id, to: request.to, consent: consent)
        let path = shownPath(result.path)
        log("item \(request.id) released to \(path) by \(review.actor)")
        return Served(answer: .init(path: path, renamed: result.renamed))
    }

    func block(_ request: GuardianWire.Block) throws -> Served<GuardianWire.Block.Answer> {
        let consent = try review.consent(to: .block, by: caller, pin: request.pin)
        let result = try review.block(request.id, keep: request.keep, origin: request.origin, consent: consent)
        log("item \(request.id) blocked by \(review.actor)")
        return Served(answer: .init(deleted: result.deleted, blockedHost: result.blockedHost))
    }

    func reveal(_ request: GuardianWire.Reveal) throws -> Served<GuardianWire.Reveal.Answer> {
        let consent = try review.consent(to: .show, by: caller, pin: request.pin)
        let (fd, item) = try review.openOriginal(request.id, consent: consent)
        log("item \(request.id) shown to \(review.actor)")
        return Served(answer: .init(name: URL(fileURLWithPath: shownPath(item.originalPath)).lastPathComponent, size: item.size), preview: fd)
    }

    func ask(_ request: GuardianWire.Ask) throws -> Served<GuardianWire.Nothing> {
        try review.requestRelease(request.id)
        log("\(account) asks for item \(request.id) back")
        return Served(answer: .init())
    }

    func purge(_ request: GuardianWire.Purge) throws -> Served<GuardianWire.Purge.Answer> {
        guard request.olderThanDays >= 0 else { throw GuardianRefusal.refused("--older-than must be 0 or more days") }
        var items = try review.purgeCandidates(olderThanDays: request.olderThanDays)
        if let ids = request.ids.map(Set.init) { items = items.filter { $0.id.map(ids.contains) ?? false } }
        let shownItems = shown(items.compactMap(GuardianWire.Item.init))
        if request.dryRun || items.isEmpty { return Served(answer: .init(items: shownItems, purged: 0)) }
        let consent = try review.consent(to: .purge, by: caller, pin: request.pin)
        let purged = try review.purge(items, consent: consent)
        log("\(purged) item(s) purged by \(review.actor)")
        return Served(answer: .init(items: shownItems, purged: purged))
    }

    func changeMode(_ request: GuardianWire.Mode) throws -> Served<GuardianWire.Mode.Answer> {
        guard request.mode != review.mode.mode else { return Served(answer: .init(changed: false)) }
        let file = try configuration()
        let consent = try review.consent(to: request.mode == .child ? .enterChildMode : .leaveChildMode, by: caller, pin: request.pin)
        try review.changeMode(to: request.mode, in: file, consent: consent)
        log("mode changed to \(request.mode.rawValue) by \(review.actor)")
        return Served(answer: .init(changed: true, reloaded: reload()), mode: request.mode)
    }

    func watch(_ request: GuardianWire.Watch) throws -> Served<GuardianWire.Watch.Answer> {
        let file = try configuration()
        let folder: String
        if request.remove {
            let consent = try review.consent(to: .removeWatchedFolder, by: caller, pin: request.pin)
            folder = try review.removeWatchedFolder(request.folder, in: file, environment: environment, relativeToHome: watchWithin != nil, consent: consent)
        } else {
            let added = try review.addWatchedFolder(request.folder, outgoing: request.outgoing, in: file, environment: environment,
                                                    within: watchWithin.map { (path: $0, account: account) })
            guard added.changed else { return Served(answer: .init(path: nil)) }
            folder = added.folder
        }
        log("\(request.remove ? "no longer watching" : "watching") \(folder) (by \(review.actor))")
        return Served(answer: .init(path: folder, reloaded: reload()))
    }

    func setPIN(_ request: GuardianWire.SetPIN) throws -> Served<GuardianWire.Nothing> {
        try review.setPIN(request.pin, current: request.current, by: caller)
        return Served(answer: .init(), pinIsSet: request.pin == nil ? nil : true)
    }

    // MARK: - Pages

    /// The events ``page(_:id:request:make:)`` may send for `request`: when paged, only those a
    /// page can hold from its `before` on are read; a history of thousands of events is not read
    /// whole for each page of it (nor a vault of thousands of items, in ``list(_:)``).
    func history<Request: GuardianPagedRequest>(of itemId: Int64?, request: Request) throws -> [GuardianWire.Event] {
        shown(try review.history(of: itemId, before: request.before, limit: pageReadLimit(request)).compactMap(GuardianWire.Event.init))
    }

    /// How many entries to read for a page of `request` (one more than it can hold, so that
    /// ``page(_:id:request:make:)`` knows whether more follow); nil when answers are not paged.
    func pageReadLimit<Request: GuardianPagedRequest>(_ request: Request) -> Int? {
        paged ? min(max(request.limit ?? GuardianProtocol.defaultPage, 1), GuardianProtocol.maxPage) + 1 : nil
    }

    /// One page of `all` (newest first, by id) as `Request`'s answer, made by `make` from the
    /// entries, whether more follow and where they start. Locally everything is one answer;
    /// at a guardian service, the entries below the request's cursor, at most its limit, and
    /// fewer while the encoded answer would be over ``GuardianProtocol/maxMessage``.
    func page<Entry, Request: GuardianPagedRequest>(_ all: [Entry], id: KeyPath<Entry, Int64>, request: Request,
                                                    make: ([Entry], Bool, Int64?) -> Request.Answer) throws -> Request.Answer {
        let after = request.before.map { before in all.drop { $0[keyPath: id] >= before } } ?? all[...]
        guard paged else { return make(Array(after), false, nil) }
        var count = min(max(request.limit ?? GuardianProtocol.defaultPage, 1), GuardianProtocol.maxPage, after.count)
        // Room for the paging fields' largest values.
        let budget = GuardianProtocol.maxMessage - 256
        while true {
            let entries = Array(after.prefix(count))
            let more = count < after.count
            let candidate = make(entries, more, more ? entries.last?[keyPath: id] : nil)
            if GuardianProtocol.encode(answer(Request.self, candidate)).count <= budget || count == 0 {
                if count == 0 && !after.isEmpty { throw GuardianRefusal.refused("an entry is too long to send") }
                return candidate
            }
            count /= 2
        }
    }

    // MARK: - Paths as people know them

    func shown(_ items: [GuardianWire.Item]) -> [GuardianWire.Item] {
        items.map { item in
            var item = item
            item.originalPath = shownPath(item.originalPath)
            return item
        }
    }

    func shown(_ events: [GuardianWire.Event]) -> [GuardianWire.Event] {
        events.map { event in
            var event = event
            event.path = event.path.map(shownPath)
            event.detail = event.detail.map(shownText)
            return event
        }
    }
}
