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
    /// member or by its own group).
    public static func isGuardian(uid: uid_t) -> Bool {
        if uid == 0 { return true }
        guard let group = getgrnam(guardiansGroup) else { return false }
        let gid = group.pointee.gr_gid
        guard let account = getpwuid(uid) else { return false }
        if account.pointee.pw_gid == gid { return true }
        let name = String(cString: account.pointee.pw_name)
        var member = group.pointee.gr_mem
        while let pointer = member?.pointee {
            if String(cString: pointer) == name { return true }
            member = member?.advanced(by: 1)
        }
        return false
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

    public init(_ verb: Verb, id: Int64? = nil, pin: String? = nil, all: Bool? = nil, keep: Bool? = nil, origin: Bool? = nil, mode: AnalysisMode? = nil,
                folder: String? = nil, outgoing: Bool? = nil, remove: Bool? = nil) {
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

/// The CLI's end of a guardian service's socket.
public final class GuardianClient: Sendable {
    public let paths: GuardianPaths
    let socket: LocalSocket
    /// The largest answer taken (a long list of items).
    static let maxAnswer = 4 << 20

    /// Connects to the service protecting `user`.
    public init(user: String) throws(ServiceError) {
        paths = GuardianPaths(user: user)
        socket = try LocalSocket.connect(to: paths.socket)
    }

    /// The service protecting the account running this, if there is one (its socket exists).
    public static func forCurrentUser() -> String? {
        guard let entry = getpwuid(getuid()), let name = entry.pointee.pw_name else { return nil }
        let user = String(cString: name)
        var info = stat()
        return lstat(GuardianPaths(user: user).socket, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK ? user : nil
    }

    /// Sends `request`; the answer and a preview descriptor when one came (the caller closes it).
    public func send(_ request: GuardianRequest) throws -> (GuardianResponse, preview: Int32?) {
        try socket.send(request.encoded())
        guard let message = try socket.receive(maxLength: Self.maxAnswer) else {
            throw ServiceError(code: .closed, operation: "guardian request", message: "the guardian service closed the connection")
        }
        let response = try GuardianResponse.decode(message.bytes)
        let preview = message.descriptors.first
        message.descriptors.dropFirst().forEach { close($0) }
        return (response, preview)
    }
}
