import Foundation
import QuarantineStore
import SensitivityAnalysis
import ServiceSupport

/// Where a protected account's guardian service keeps things. The child owns none of it.
public struct GuardianPaths: Sendable, Equatable {
    /// The protected account.
    public var user: String

    public init(user: String) { self.user = user }

    /// Its configuration (mode, folders, policies): root's, read by the service.
    public var configuration: String { "/etc/quarantine/\(user).toml" }
    /// Its database, vault and previews (0700, the service's system user).
    public var state: String { "/var/lib/quarantine/\(user)" }
    /// The service's socket: the child's and the guardians' CLI connect here.
    public var socket: String { Self.socketFolder + "/\(user).sock" }

    public static let socketFolder = "/run/quarantine"
    /// The ONNX Runtime and the models the guardian services load (root's copy, `lib/` and
    /// `models/`): nothing the child owns is ever loaded.
    public static let runtime = "/var/lib/quarantine/runtime"
    /// Members may act as guardian from their own accounts.
    public static let guardiansGroup = "quarantine-guardians"
    /// The system user the services run as.
    public static let serviceUser = "quarantine"

    /// Whether `uid` may act as guardian: root, or in the `quarantine-guardians` group (as a
    /// member or by its own group). Safe on any thread (``AccountLookup``).
    public static func isGuardian(uid: uid_t) -> Bool {
        uid == 0 || AccountLookup.isMember(uid: uid, ofGroup: guardiansGroup)
    }

    /// The accounts whose guardian service answers here (a socket in ``socketFolder``).
    public static func servedAccounts() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: socketFolder)) ?? []).filter { $0.hasSuffix(".sock") }.map { String($0.dropLast(5)) }.sorted()
    }
}

/// One request to a guardian service (JSON in one SOCK_SEQPACKET message).
public struct GuardianRequest: Codable, Sendable {
    public enum Verb: String, Codable, Sendable {
        /// Who am I to the service, the mode, whether a PIN is set.
        case hello
        case list, show, history, release, block
        /// The child asks for an item back without the PIN.
        case ask
        /// Show (no `mode`) or change the mode: a guardian's.
        case mode
        /// Set the guardian PIN: a guardian's.
        case setPIN
        case status
        /// Add (or with `remove`, stop watching) `folder`: a guardian's.
        case watch
    }

    public var verb: Verb
    public var id: Int64?
    public var pin: String?
    public var all: Bool?
    public var keep: Bool?
    public var origin: Bool?
    public var mode: AnalysisMode?
    public var folder: String?
    public var outgoing: Bool?
    public var remove: Bool?
    /// Paging (`list`, `history`, `show`'s events): only entries whose id is below this cursor
    /// (the previous page's ``GuardianResponse/next``); nil from the newest.
    public var before: Int64?
    /// Paging: at most this many entries (the service may send fewer, to keep a message under
    /// ``GuardianProtocol/maxMessage``).
    public var limit: Int?

    public init(_ verb: Verb, id: Int64? = nil, pin: String? = nil, all: Bool? = nil, keep: Bool? = nil, origin: Bool? = nil, mode: AnalysisMode? = nil,
                folder: String? = nil, outgoing: Bool? = nil, remove: Bool? = nil, before: Int64? = nil, limit: Int? = nil) {
        self.before = before
        self.limit = limit
        self.folder = folder
        self.outgoing = outgoing
        self.remove = remove
        self.verb = verb
        self.id = id
        self.pin = pin
        self.all = all
        self.keep = keep
        self.origin = origin
        self.mode = mode
    }
}

/// Who the caller is to a guardian service, as the kernel says (SO_PEERCRED).
public enum GuardianRole: String, Codable, Sendable {
    /// The protected account: sees its own items (previews only), asks, needs the PIN.
    case child
    /// Root or a member of `quarantine-guardians`: everything, without the PIN.
    case guardian
}

/// The answer to one request.
public struct GuardianResponse: Codable, Sendable {
    /// Why nothing was done.
    public enum Refusal: Codable, Sendable, Equatable {
        case wrongPIN(wait: TimeInterval)
        case waitForPIN(until: Date)
        /// Not allowed for this caller, or not possible now; the words say which.
        case refused(String)
    }

    public var refusal: Refusal?
    public var user: String?
    public var role: GuardianRole?
    public var mode: AnalysisMode?
    public var pinIsSet: Bool?
    public var items: [VaultItem]?
    /// Open release requests: item id -> when it was asked.
    public var requests: [Int64: Date]?
    public var events: [AuditEvent]?
    public var path: String?
    public var renamed: Bool?
    public var deleted: Bool?
    public var blockedHost: String?
    public var status: AgentStatus?
    /// A preview descriptor came with this message.
    public var hasPreview: Bool?
    /// Paging: more entries follow; ask again with `before` set to ``next``.
    public var more: Bool?
    /// Paging: the cursor for the next page (the id of the last entry of this one).
    public var next: Int64?

    public init() {}

    public static func refused(_ words: String) -> GuardianResponse {
        var response = GuardianResponse()
        response.refusal = .refused(words)
        return response
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()
    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    public func encoded() -> [UInt8] { (try? Self.encoder.encode(self)).map { [UInt8]($0) } ?? [] }
    public static func decode(_ bytes: [UInt8]) throws -> GuardianResponse { try decoder.decode(GuardianResponse.self, from: Data(bytes)) }
}

extension GuardianRequest {
    public func encoded() -> [UInt8] { (try? GuardianResponse.encoder.encode(self)).map { [UInt8]($0) } ?? [] }
    public static func decode(_ bytes: [UInt8]) throws -> GuardianRequest { try GuardianResponse.decoder.decode(GuardianRequest.self, from: Data(bytes)) }
}

/// The limits both ends of the socket keep.
public enum GuardianProtocol {
    /// The largest message either side sends: every answer fits one SEQPACKET message of this
    /// size (long lists come in pages), far below the socket's buffer (about 208 KiB).
    public static let maxMessage = 64 << 10
    /// The largest request the service reads (a folder path and a PIN need far less).
    public static let maxRequest = 16 << 10
    /// Entries per page when the request does not say.
    public static let defaultPage = 200
    /// The most entries a page holds, whatever the request says.
    public static let maxPage = 1000
}

/// The CLI's end of a guardian service's socket.
public final class GuardianClient: Sendable {
    public let paths: GuardianPaths
    let socket: LocalSocket
    /// How long an answer may take (a release can copy a large video across file systems).
    static let answerTimeout: Duration = .seconds(120)
    /// The most pages one request follows (at least a million entries).
    static let maxPages = 100_000

    /// Connects to the service protecting `user`.
    public convenience init(user: String) throws(ServiceError) {
        try self.init(paths: GuardianPaths(user: user), socketPath: GuardianPaths(user: user).socket)
    }

    /// Connects to the socket at `socketPath` (tests: a service listening elsewhere).
    public init(paths: GuardianPaths, socketPath: String) throws(ServiceError) {
        self.paths = paths
        socket = try LocalSocket.connect(to: socketPath)
        try? socket.setTimeouts(receive: Self.answerTimeout, send: .seconds(10))
    }

    /// A client on a socket already connected (tests: one end of a socket pair).
    public init(paths: GuardianPaths, connected socket: LocalSocket) {
        self.paths = paths
        self.socket = socket
        try? socket.setTimeouts(receive: Self.answerTimeout, send: .seconds(10))
    }

    /// The service protecting the account running this, if there is one (its socket exists).
    public static func forCurrentUser() -> String? {
        guard let user = AccountLookup.account(uid: getuid())?.name else { return nil }
        var info = stat()
        return lstat(GuardianPaths(user: user).socket, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK ? user : nil
    }

    /// Sends `request`; the whole answer (every page of a `list`, `history` or `show`, fetched
    /// one after another) and a preview descriptor when one came (the caller closes it).
    public func send(_ request: GuardianRequest) throws -> (GuardianResponse, preview: Int32?) {
        var (answer, preview) = try sendOne(request)
        var page = request
        var pages = 1
        while answer.refusal == nil, answer.more == true, let next = answer.next, pages < Self.maxPages {
            // The cursor must go down, or a broken service would keep this asking for ever.
            guard page.before.map({ next < $0 }) ?? true else { break }
            page.before = next
            let (more, extra) = try sendOne(page)
            if let extra { close(extra) }
            if let refusal = more.refusal { answer.refusal = refusal; break }
            answer.merge(more)
            pages += 1
        }
        if answer.refusal != nil, let open = preview { close(open); preview = nil }
        return (answer, preview)
    }

    /// Sends `request` and reads one answer message (one page).
    public func sendOne(_ request: GuardianRequest) throws -> (GuardianResponse, preview: Int32?) {
        do { try socket.send(request.encoded()) } catch {
            // A service that refused this account sent its reason first, then closed: the send
            // fails (EPIPE) while the reason waits to be read.
            if let answer = reasonLeftBehind() { return (answer, nil) }
            throw closedError(cause: error)
        }
        let message: LocalSocket.Message?
        do { message = try socket.receive(maxLength: GuardianProtocol.maxMessage) } catch {
            // Closed with this request unread: the kernel reports ECONNRESET first, and the
            // reason sent before the close comes on the next read.
            if let answer = reasonLeftBehind() { return (answer, nil) }
            throw closedError(cause: error)
        }
        guard let message else { throw closedError(cause: nil) }
        guard let response = try? GuardianResponse.decode(message.bytes) else {
            message.descriptors.forEach { close($0) }
            throw ServiceError(code: .closed, operation: "guardian request", message: "the guardian service for \(paths.user) sent an answer this quarantine does not understand (a different version?)")
        }
        let preview = message.descriptors.first
        message.descriptors.dropFirst().forEach { close($0) }
        return (response, preview)
    }

    /// The refusal a service sent before closing the connection, if one is still to be read
    /// (a reset is reported before it, so two reads are tried).
    func reasonLeftBehind() -> GuardianResponse? {
        for _ in 0..<2 {
            let reason: LocalSocket.Message?
            do { reason = try socket.receive(maxLength: GuardianProtocol.maxMessage) } catch { continue }
            guard let reason else { return nil }
            reason.descriptors.forEach { close($0) }
            return try? GuardianResponse.decode(reason.bytes)
        }
        return nil
    }

    func closedError(cause: Error?) -> ServiceError {
        ServiceError(code: .closed, operation: "guardian request",
                     message: "the guardian service for \(paths.user) closed the connection without an answer: only \(paths.user), root and members of \(GuardianPaths.guardiansGroup) may use it, and each account may hold only a few connections at once",
                     cause: cause.map { "\($0)" })
    }
}

extension GuardianResponse {
    /// Adds the entries of a further page of the same answer.
    public mutating func merge(_ page: GuardianResponse) {
        if let more = page.items {
            let known = Set((items ?? []).compactMap(\.id))
            items = (items ?? []) + more.filter { $0.id.map { !known.contains($0) } ?? true }
        }
        if let more = page.events { events = (events ?? []) + more }
        if let more = page.requests { requests = (requests ?? [:]).merging(more) { first, _ in first } }
        self.more = page.more
        next = page.next
    }
}

/// A refusal can be thrown by the service's handlers and is sent as it is.
extension GuardianResponse.Refusal: Error {}
