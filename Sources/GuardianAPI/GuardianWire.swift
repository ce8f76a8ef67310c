import Foundation
import QuarantineStore
import SensitivityAnalysis

/// The guardian socket's request and answer types, one pair per ``GuardianVerb``, and the plain
/// values they carry (an item, an event, the status): what the wire holds, not the database's
/// records (an item on the wire has no vault name, owner, mode or extended attributes).
public enum GuardianWire {
    /// An empty answer body (a refusal's, and verbs that answer nothing more than the header).
    public struct Nothing: Codable, Sendable, Equatable { public init() {} }

    /// Every verb's request type.
    public static let requestTypes: [GuardianVerb: any GuardianRequest.Type] = Dictionary(uniqueKeysWithValues: ([
        Hello.self, Status.self, List.self, Show.self, History.self, Release.self, Block.self, Ask.self, Mode.self, SetPIN.self, Watch.self,
        Purge.self, WatchList.self, Count.self, Reveal.self, Analyze.self, LiveStream.self,
    ] as [any GuardianRequest.Type]).map { ($0.verb, $0) })

    // MARK: - Verbs

    /// `hello`: the header says who the caller is; the answer, what it may ask.
    public struct Hello: GuardianRequest {
        public static let verb = GuardianVerb.hello
        public static let fields: Set<String> = []
        public init() {}
        public struct Answer: Codable, Sendable, Equatable {
            /// The verbs the route table lets this caller use.
            public var verbs: [GuardianVerb]
            /// Why the mode in force is stricter than the configuration says, when it is.
            public var modeNote: String?
            public init(verbs: [GuardianVerb], modeNote: String? = nil) {
                self.verbs = verbs
                self.modeNote = modeNote
            }
        }
    }

    /// `status`: what the service is doing.
    public struct Status: GuardianRequest {
        public static let verb = GuardianVerb.status
        public static let fields: Set<String> = []
        public init() {}
        public struct Answer: Codable, Sendable, Equatable {
            /// What the agent published last; nil before it did.
            public var status: ServiceStatus?
            /// Whether the agent (or the service) runs now, and its process.
            public var running: Bool?
            public var pid: Int32?
            /// Files waiting in the backlog.
            public var waiting: Int?
            /// Everything the agent published last (its counters, what it checks now).
            public var agent: AgentStatus?
            public init(status: ServiceStatus?, running: Bool? = nil, pid: Int32? = nil, waiting: Int? = nil, agent: AgentStatus? = nil) {
                self.status = status
                self.running = running
                self.pid = pid
                self.waiting = waiting
                self.agent = agent
            }
        }
    }

    /// `list`: the vault's items, newest first, with the release requests among them (paged).
    public struct List: GuardianPagedRequest {
        public static let verb = GuardianVerb.list
        public static let fields: Set<String> = ["all", "before", "limit"]
        /// Also items released, blocked and purged.
        public var all: Bool
        public var before: Int64?
        public var limit: Int?
        public init(all: Bool = false, before: Int64? = nil, limit: Int? = nil) {
            self.all = all
            self.before = before
            self.limit = limit
        }
        public init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            all = try container.decodeIfPresent(Bool.self, forKey: .all) ?? false
            before = try container.decodeIfPresent(Int64.self, forKey: .before)
            limit = try container.decodeIfPresent(Int.self, forKey: .limit)
        }
        public struct Answer: GuardianPagedAnswer, Equatable {
            public var items: [Item]
            /// Open release requests among ``items``: item id -> when it was asked.
            public var requests: [Int64: Date]
            public var more: Bool
            public var next: Int64?
            public init(items: [Item], requests: [Int64: Date], more: Bool = false, next: Int64? = nil) {
                self.items = items
                self.requests = requests
                self.more = more
                self.next = next
            }
            public mutating func append(page: Answer) {
                let known = Set(items.map(\.id))
                items += page.items.filter { !known.contains($0.id) }
                requests.merge(page.requests) { first, _ in first }
                more = page.more
                next = page.next
            }
        }
    }

    /// `show`: one item and its events (paged; the blurred preview's descriptor comes with the
    /// first page).
    public struct Show: GuardianPagedRequest {
        public static let verb = GuardianVerb.show
        public static let fields: Set<String> = ["id", "before", "limit"]
        public var id: Int64
        public var before: Int64?
        public var limit: Int?
        public init(id: Int64, before: Int64? = nil, limit: Int? = nil) {
            self.id = id
            self.before = before
            self.limit = limit
        }
        public struct Answer: GuardianPagedAnswer, Equatable {
            public var item: Item
            /// When the child asked for it back, if it did and the request is open.
            public var requestedAt: Date?
            public var events: [Event]
            /// A preview descriptor came with this message.
            public var hasPreview: Bool
            /// Where the blurred preview is, when the caller may read it there (the local
            /// backend: the person's own vault; never sent by a guardian service).
            public var previewPath: String?
            public var more: Bool
            public var next: Int64?
            public init(item: Item, requestedAt: Date?, events: [Event], hasPreview: Bool, previewPath: String? = nil, more: Bool = false, next: Int64? = nil) {
                self.item = item
                self.requestedAt = requestedAt
                self.events = events
                self.hasPreview = hasPreview
                self.previewPath = previewPath
                self.more = more
                self.next = next
            }
            public mutating func append(page: Answer) {
                events += page.events
                more = page.more
                next = page.next
            }
        }
    }

    /// `history`: the audit log, newest first (paged): a guardian's.
    public struct History: GuardianPagedRequest {
        public static let verb = GuardianVerb.history
        public static let fields: Set<String> = ["before", "limit"]
        public var before: Int64?
        public var limit: Int?
        public init(before: Int64? = nil, limit: Int? = nil) {
            self.before = before
            self.limit = limit
        }
        public struct Answer: GuardianPagedAnswer, Equatable {
            public var events: [Event]
            public var more: Bool
            public var next: Int64?
            public init(events: [Event], more: Bool = false, next: Int64? = nil) {
                self.events = events
                self.more = more
                self.next = next
            }
            public mutating func append(page: Answer) {
                events += page.events
                more = page.more
                next = page.next
            }
        }
    }

    /// `release`: puts an item back (the child: with the guardian PIN).
    public struct Release: GuardianRequest {
        public static let verb = GuardianVerb.release
        public static let fields: Set<String> = ["id", "pin", "to"]
        public var id: Int64
        public var pin: String?
        /// Into this folder instead of the original one (the local backend only: a guardian
        /// service puts files back where they were).
        public var to: String?
        public init(id: Int64, pin: String? = nil, to: String? = nil) {
            self.id = id
            self.pin = pin
            self.to = to
        }
        public struct Answer: Codable, Sendable, Equatable {
            /// Where it is now.
            public var path: String
            /// The name was taken: it came back under another.
            public var renamed: Bool
            public init(path: String, renamed: Bool) {
                self.path = path
                self.renamed = renamed
            }
        }
    }

    /// `block`: deletes (or with `keep`, seals) an item and blocks its bytes, with `origin` its
    /// site too (the child: with the guardian PIN).
    public struct Block: GuardianRequest {
        public static let verb = GuardianVerb.block
        public static let fields: Set<String> = ["id", "pin", "keep", "origin"]
        public var id: Int64
        public var pin: String?
        public var keep: Bool
        public var origin: Bool
        public init(id: Int64, pin: String? = nil, keep: Bool = false, origin: Bool = false) {
            self.id = id
            self.pin = pin
            self.keep = keep
            self.origin = origin
        }
        public init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(Int64.self, forKey: .id)
            pin = try container.decodeIfPresent(String.self, forKey: .pin)
            keep = try container.decodeIfPresent(Bool.self, forKey: .keep) ?? false
            origin = try container.decodeIfPresent(Bool.self, forKey: .origin) ?? false
        }
        public struct Answer: Codable, Sendable, Equatable {
            public var deleted: Bool
            /// The site now blocked, with `origin`.
            public var blockedHost: String?
            public init(deleted: Bool, blockedHost: String?) {
                self.deleted = deleted
                self.blockedHost = blockedHost
            }
        }
    }

    /// `ask`: the child asks a guardian for an item back, without the PIN.
    public struct Ask: GuardianRequest {
        public static let verb = GuardianVerb.ask
        public static let fields: Set<String> = ["id"]
        public var id: Int64
        public init(id: Int64) { self.id = id }
        public typealias Answer = Nothing
    }

    /// `mode`: changes the mode (a guardian's). To see the mode, any answer's header says it.
    public struct Mode: GuardianRequest {
        public static let verb = GuardianVerb.mode
        public static let fields: Set<String> = ["mode", "pin"]
        public var mode: AnalysisMode
        /// The guardian PIN, when the caller's consent needs it (leaving child mode locally).
        public var pin: String?
        public init(mode: AnalysisMode, pin: String? = nil) {
            self.mode = mode
            self.pin = pin
        }
        public struct Answer: Codable, Sendable, Equatable {
            /// False when it was that mode already.
            public var changed: Bool
            /// Whether the running agent picked the change up, in words (the local backend).
            public var reloaded: String?
            public init(changed: Bool, reloaded: String? = nil) {
                self.changed = changed
                self.reloaded = reloaded
            }
        }
    }

    /// `setPIN`: sets the guardian PIN (a guardian's).
    public struct SetPIN: GuardianRequest {
        public static let verb = GuardianVerb.setPIN
        public static let fields: Set<String> = ["pin", "current"]
        /// The new PIN; nil: only check ``current`` (a front end checks it before asking for
        /// the new one; a wrong one counts as any wrong PIN does).
        public var pin: String?
        /// The PIN set now, when the caller must know it to change it (not a guardian).
        public var current: String?
        public init(pin: String?, current: String? = nil) {
            self.pin = pin
            self.current = current
        }
        public typealias Answer = Nothing
    }

    /// `watch`: watches a folder of the account's home (with `remove`, stops): a guardian's.
    public struct Watch: GuardianRequest {
        public static let verb = GuardianVerb.watch
        public static let fields: Set<String> = ["folder", "outgoing", "remove", "pin"]
        /// Absolute, `~/...`, or relative to the account's home.
        public var folder: String
        public var outgoing: Bool
        public var remove: Bool
        /// The guardian PIN, when removing needs it (child mode, locally).
        public var pin: String?
        public init(folder: String, outgoing: Bool = false, remove: Bool = false, pin: String? = nil) {
            self.folder = folder
            self.outgoing = outgoing
            self.remove = remove
            self.pin = pin
        }
        public init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            folder = try container.decode(String.self, forKey: .folder)
            outgoing = try container.decodeIfPresent(Bool.self, forKey: .outgoing) ?? false
            remove = try container.decodeIfPresent(Bool.self, forKey: .remove) ?? false
            pin = try container.decodeIfPresent(String.self, forKey: .pin)
        }
        public struct Answer: Codable, Sendable, Equatable {
            /// The folder as it was written into the configuration; nil when nothing changed.
            public var path: String?
            /// Whether the running agent picked the change up, in words (the local backend).
            public var reloaded: String?
            public init(path: String?, reloaded: String? = nil) {
                self.path = path
                self.reloaded = reloaded
            }
        }
    }

    /// `watchList`: the folders watched, and which of them the configuration's mode watches.
    public struct WatchList: GuardianRequest {
        public static let verb = GuardianVerb.watchList
        public static let fields: Set<String> = []
        public init() {}
        public struct Answer: Codable, Sendable, Equatable {
            /// One watched folder.
            public struct Folder: Codable, Sendable, Equatable {
                public var path: String
                /// "incoming" or "outgoing".
                public var direction: String
                /// Watched in the mode in force (outgoing folders: in child mode only).
                public var active: Bool
                /// The folder exists now (a missing one is watched once it exists).
                public var exists: Bool
                /// The account's download folder, watched by default.
                public var isDefault: Bool
                public init(path: String, direction: String, active: Bool, exists: Bool, isDefault: Bool) {
                    self.path = path
                    self.direction = direction
                    self.active = active
                    self.exists = exists
                    self.isDefault = isDefault
                }
            }
            /// The configuration's mode.
            public var mode: AnalysisMode
            /// No incoming folder is configured: the download folder is watched.
            public var defaultDownloadFolder: Bool
            public var folders: [Folder]
            public init(mode: AnalysisMode, defaultDownloadFolder: Bool, folders: [Folder]) {
                self.mode = mode
                self.defaultDownloadFolder = defaultDownloadFolder
                self.folders = folders
            }
        }
    }

    /// `purge`: deletes items hidden more than `olderThanDays` days ago, recording each; with
    /// `dryRun`, only names them. `ids` limits it to the items named before (what the person saw).
    public struct Purge: GuardianRequest {
        public static let verb = GuardianVerb.purge
        public static let fields: Set<String> = ["olderThanDays", "dryRun", "ids", "pin"]
        public var olderThanDays: Int
        public var dryRun: Bool
        public var ids: [Int64]?
        public var pin: String?
        public init(olderThanDays: Int, dryRun: Bool = false, ids: [Int64]? = nil, pin: String? = nil) {
            self.olderThanDays = olderThanDays
            self.dryRun = dryRun
            self.ids = ids
            self.pin = pin
        }
        public init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            olderThanDays = try container.decode(Int.self, forKey: .olderThanDays)
            dryRun = try container.decodeIfPresent(Bool.self, forKey: .dryRun) ?? false
            ids = try container.decodeIfPresent([Int64].self, forKey: .ids)
            pin = try container.decodeIfPresent(String.self, forKey: .pin)
        }
        public struct Answer: Codable, Sendable, Equatable {
            /// The items old enough (with `dryRun`), or those deleted.
            public var items: [Item]
            /// How many were deleted (0 with `dryRun`).
            public var purged: Int
            public init(items: [Item], purged: Int) {
                self.items = items
                self.purged = purged
            }
        }
    }

    // MARK: - Values

    /// One vault item, as a person may see it: where it came from, why, its state.
    public struct Item: Codable, Sendable, Equatable {
        public var id: Int64
        public var createdAt: Date
        public var originalPath: String
        public var size: Int64
        public var sha256: String
        /// The verdict's reasons, e.g. "FEMALE_BREAST_EXPOSED 0.83".
        public var reasons: [String]
        public var analysisMode: AnalysisMode
        /// "quarantined", "released", "blocked", "sealed", "purged", ...
        public var status: String
        /// Whether the vault holds a blurred preview of it.
        public var hasPreview: Bool
        public var originURL: String?
        public var referrerURL: String?

        public init(id: Int64, createdAt: Date, originalPath: String, size: Int64, sha256: String, reasons: [String], analysisMode: AnalysisMode,
                    status: String, hasPreview: Bool, originURL: String? = nil, referrerURL: String? = nil) {
            self.id = id
            self.createdAt = createdAt
            self.originalPath = originalPath
            self.size = size
            self.sha256 = sha256
            self.reasons = reasons
            self.analysisMode = analysisMode
            self.status = status
            self.hasPreview = hasPreview
            self.originURL = originURL
            self.referrerURL = referrerURL
        }
    }

    /// One line of the audit log.
    public struct Event: Codable, Sendable, Equatable {
        public var id: Int64
        public var itemId: Int64?
        public var at: Date
        /// "quarantined", "released", "release_requested", ...
        public var kind: String
        public var mode: AnalysisMode
        public var actor: String
        public var path: String?
        public var detail: String?

        public init(id: Int64, itemId: Int64?, at: Date, kind: String, mode: AnalysisMode, actor: String, path: String?, detail: String?) {
            self.id = id
            self.itemId = itemId
            self.at = at
            self.kind = kind
            self.mode = mode
            self.actor = actor
            self.path = path
            self.detail = detail
        }
    }

    /// What the service is doing (``Status``'s answer).
    public struct ServiceStatus: Codable, Sendable, Equatable {
        /// A watched folder and how it is watched ("watching", "missing", ...).
        public struct Folder: Codable, Sendable, Equatable {
            public var path: String
            /// "incoming" or "outgoing".
            public var direction: String
            public var state: String
            public init(path: String, direction: String, state: String) {
                self.path = path
                self.direction = direction
                self.state = state
            }
        }
        /// "starting", "running", "stopping", "stopped".
        public var state: String
        public var updatedAt: Date?
        public var folders: [Folder]
        public var queueDepth: Int
        /// Files being judged now.
        public var inFlight: Int
        /// Why nothing can be analysed right now, if so.
        public var problem: String?
        /// What analyses files (the worker running, idle), if anything can.
        public var analysis: String?
        /// What the account can write that is not watched, each with its reason.
        public var unwatched: [String]?
        /// The audit database's fault, while it refuses writes.
        public var databaseFault: String?

        public init(state: String, updatedAt: Date? = nil, folders: [Folder] = [], queueDepth: Int = 0, inFlight: Int = 0, problem: String? = nil,
                    analysis: String? = nil, unwatched: [String]? = nil, databaseFault: String? = nil) {
            self.state = state
            self.updatedAt = updatedAt
            self.folders = folders
            self.queueDepth = queueDepth
            self.inFlight = inFlight
            self.problem = problem
            self.analysis = analysis
            self.unwatched = unwatched
            self.databaseFault = databaseFault
        }
    }
}
