import Foundation
import SensitivityAnalysis

/// The guardian service's socket protocol: one SOCK_SEQPACKET message per request and per
/// answer, JSON, versioned (``version``) and bounded (``maxRequest``, ``maxMessage``, pages).
///
/// A request is one JSON object: its verb, the protocol version, and the fields of that verb's
/// request type, side by side (`{"verb":"release","version":1,"id":3,"pin":"2468"}`; a request
/// without `version` is read as version 1). Each verb has one request type and one answer type
/// (``GuardianWire``), plain Codable values; an answer is a ``GuardianAnswer`` of the verb's
/// answer type. A message that is not a request, of an unknown verb, of another version, or whose
/// fields do not make the verb's request is answered with a ``GuardianProtocolError``.
public enum GuardianProtocol {
    /// The version both ends speak (sent in every request and answer).
    public static let version = 1
    /// The largest message either side sends: every answer fits one SEQPACKET message of this
    /// size (long lists come in pages), far below the socket's buffer (about 208 KiB).
    public static let maxMessage = 64 << 10
    /// The largest request the service reads (a folder path and a PIN need far less).
    public static let maxRequest = 16 << 10
    /// Entries per page when the request does not say.
    public static let defaultPage = 200
    /// The most entries a page holds, whatever the request says.
    public static let maxPage = 1000

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()
    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    // MARK: - Requests

    /// `request` as it goes on the wire: its fields, its verb and the version in one object.
    public static func encode<Request: GuardianRequest>(_ request: Request) -> [UInt8] {
        (try? encoder.encode(RequestEnvelope(request: request))).map { [UInt8]($0) } ?? []
    }

    /// The verb a message asks for: throws when it is not a request (not a JSON object, no verb),
    /// of another version, or of a verb this side does not know.
    public static func verb(of bytes: [UInt8]) throws(GuardianProtocolError) -> GuardianVerb {
        let header: RequestHeader
        do { header = try decoder.decode(RequestHeader.self, from: Data(bytes)) } catch {
            throw .notARequest("not a JSON object with a verb")
        }
        guard let name = header.verb else { throw .notARequest("no verb") }
        if let version = header.version, version != Self.version { throw .unsupportedVersion(version) }
        guard let verb = GuardianVerb(rawValue: name) else { throw .unknownVerb(String(name.prefix(64))) }
        return verb
    }

    /// The request of type `Request` in `bytes` (its verb already checked by ``verb(of:)``):
    /// throws ``GuardianProtocolError/malformed(verb:reason:)`` saying which field is missing or wrong.
    /// A field the request type does not have is refused too, never ignored (`kep` for `keep`
    /// would otherwise delete what was to be sealed).
    public static func decode<Request: GuardianRequest>(_ type: Request.Type, from bytes: [UInt8]) throws(GuardianProtocolError) -> Request {
        let request: Request
        do { request = try decoder.decode(Request.self, from: Data(bytes)) } catch {
            throw .malformed(verb: Request.verb, reason: describe(error))
        }
        let keys = (try? decoder.decode(RequestHeader.self, from: Data(bytes)))?.keys ?? []
        if let unknown = keys.subtracting(Request.fields).subtracting(["verb", "version"]).sorted().first {
            throw .malformed(verb: Request.verb, reason: "it has no field '\(unknown.prefix(64))'")
        }
        return request
    }

    // MARK: - Answers

    /// `answer` as it goes on the wire.
    public static func encode<Body>(_ answer: GuardianAnswer<Body>) -> [UInt8] {
        (try? encoder.encode(answer)).map { [UInt8]($0) } ?? []
    }

    /// An answer that is only a refusal (of no verb's type: a stranger's, a message not understood).
    public static func refusal(_ refusal: GuardianRefusal, verb: GuardianVerb? = nil) -> [UInt8] {
        encode(GuardianAnswer<GuardianWire.Nothing>(verb: verb, refusal: refusal))
    }

    /// The answer in `bytes`, its body read as `Body`: throws when it is not one of this version.
    public static func decodeAnswer<Body>(_ type: Body.Type, from bytes: [UInt8]) throws -> GuardianAnswer<Body> {
        let answer = try decoder.decode(GuardianAnswer<Body>.self, from: Data(bytes))
        guard answer.version == version else { throw GuardianProtocolError.unsupportedVersion(answer.version) }
        return answer
    }

    /// A decoding error in a few words: which field, what is wrong with it.
    static func describe(_ error: Error) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let names = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return names.isEmpty ? "the request" : names.joined(separator: ".")
        }
        let words: String
        switch error as? DecodingError {
        case .keyNotFound(let key, _): words = "\(key.stringValue) is missing"
        case .typeMismatch(let type, let context): words = "\(path(context)) is not \(type == String.self ? "a string" : "a \(type)")"
        case .valueNotFound(_, let context): words = "\(path(context)) is null"
        case .dataCorrupted(let context): words = "\(path(context)): \(context.debugDescription)"
        default: words = "not JSON"
        }
        return String(words.prefix(200))
    }
}

/// The verbs of the guardian socket; each has one request type and one answer type in
/// ``GuardianWire`` and one entry in the service's route table.
public enum GuardianVerb: String, Codable, Sendable, CaseIterable {
    /// Who am I to the service, the mode, whether a PIN is set, what I may ask.
    case hello
    case status, list, show, history, release, block
    /// The child asks for an item back without the PIN.
    case ask
    /// Change the mode: a guardian's (every answer says the mode in force).
    case mode
    /// Set the guardian PIN: a guardian's.
    case setPIN
    /// Add (or with `remove`, stop watching) a folder: a guardian's.
    case watch
    /// The folders watched.
    case watchList
    /// Delete old items for good.
    case purge
    /// How many items the vault holds, by state.
    case count
    /// The original of one item, as a descriptor, to be shown (the review page's Show).
    case reveal
    /// Judge a picture or video passed as a descriptor (the session forwarder's, for the
    /// protected account's applications): the only request that carries a descriptor.
    case analyze
    /// Judge a live stream's frames (the session forwarder's `BeginStream`): one connection per
    /// stream, each frame one picture file passed as a descriptor.
    case stream
}

/// One verb's request: a plain value, sent as one JSON object with its verb and the version.
/// Its fields must not be named `verb` or `version`.
public protocol GuardianRequest: Codable, Sendable {
    /// What the service answers to it when it is served.
    associatedtype Answer: Codable, Sendable
    static var verb: GuardianVerb { get }
    /// The names of its fields on the wire: any other is refused (a test holds them to the type's
    /// own encoding).
    static var fields: Set<String> { get }
}

/// A request whose answer comes in pages, newest first by id: ``before`` is the previous page's
/// ``GuardianPagedAnswer/next`` (nil from the newest); ``limit`` at most so many entries (the
/// service may send fewer, to keep an answer under ``GuardianProtocol/maxMessage``).
public protocol GuardianPagedRequest: GuardianRequest where Answer: GuardianPagedAnswer {
    var before: Int64? { get set }
    var limit: Int? { get set }
}

/// One page of a paged answer: ``more`` entries follow from ``next``.
public protocol GuardianPagedAnswer: Codable, Sendable {
    var more: Bool { get set }
    var next: Int64? { get set }
    /// Adds the entries of the following page of the same answer (and takes its paging).
    mutating func append(page: Self)
}

/// Who the caller is to a guardian service, as the kernel says (SO_PEERCRED).
public enum GuardianRole: String, Codable, Sendable {
    /// The protected account: sees its own items (previews only), asks, needs the PIN.
    case child
    /// Root or a member of `quarantine-guardians`: everything, without the PIN.
    case guardian
}

/// One answer: the version, who asked (the caller's role, the account, its mode, whether a PIN
/// is set: every answer the service sends after admitting the caller says so), and either the
/// verb's answer or why there is none.
public struct GuardianAnswer<Body: Codable & Sendable>: Codable, Sendable {
    public var version: Int
    /// The verb answered; nil when the message was not understood as one.
    public var verb: GuardianVerb?
    public var user: String?
    public var role: GuardianRole?
    /// The mode in force after the request (a `mode` request's new mode).
    public var mode: AnalysisMode?
    public var pinIsSet: Bool?
    public var refusal: GuardianRefusal?
    /// The verb's answer, when it was served.
    public var answer: Body?

    public init(version: Int = GuardianProtocol.version, verb: GuardianVerb?, user: String? = nil, role: GuardianRole? = nil, mode: AnalysisMode? = nil,
                pinIsSet: Bool? = nil, refusal: GuardianRefusal? = nil, answer: Body? = nil) {
        self.version = version
        self.verb = verb
        self.user = user
        self.role = role
        self.mode = mode
        self.pinIsSet = pinIsSet
        self.refusal = refusal
        self.answer = answer
    }
}

/// Why a request was not served.
public enum GuardianRefusal: Error, Codable, Sendable, Equatable, CustomStringConvertible {
    /// The PIN given is not the guardian's; the next try waits `wait` seconds.
    case wrongPIN(wait: TimeInterval)
    /// Too many wrong PINs: not checked until `until`.
    case waitForPIN(until: Date)
    /// Not allowed for this caller, or not possible now; the words say which.
    case refused(String)
    /// Allowed, but it could not be done (no such item, a file that could not be moved, a
    /// configuration that cannot be read); the words say what failed.
    case failed(String)
    /// The message is not a request this service can read.
    case invalid(GuardianProtocolError)

    public var description: String {
        switch self {
        case .wrongPIN: "that PIN is not right"
        case .waitForPIN: "too many wrong PINs; wait before trying again"
        case .refused(let words): words
        case .failed(let words): words
        case .invalid(let error): error.description
        }
    }
}

/// A message the other end cannot read: each a typed case, with words for a person.
public enum GuardianProtocolError: Error, Codable, Sendable, Equatable, CustomStringConvertible {
    /// Not a JSON object with a verb.
    case notARequest(String)
    /// A verb this side does not have (a newer client?).
    case unknownVerb(String)
    /// Another version of the protocol.
    case unsupportedVersion(Int)
    /// The verb is known, its fields do not make its request: which one and why.
    case malformed(verb: GuardianVerb, reason: String)
    /// Longer than ``GuardianProtocol/maxRequest`` (or with descriptors, which were closed).
    case tooLong(limit: Int)
    /// Requests carry no descriptors (those sent were closed).
    case carriesDescriptors

    public var description: String {
        switch self {
        case .notARequest(let why): "not a request this service understands (\(why))"
        case .unknownVerb(let verb): "this guardian service has no verb '\(verb)' (a different version of quarantine?)"
        case .unsupportedVersion(let version): "protocol version \(version) is not spoken here (this side speaks version \(GuardianProtocol.version): a different version of quarantine?)"
        case .malformed(let verb, let reason): "a \(verb.rawValue) request this service cannot read: \(reason)"
        case .tooLong(let limit): "a request is at most \(limit) bytes, with no descriptors"
        case .carriesDescriptors: "requests carry no descriptors (but analyze and a stream's frames, from the protected account: exactly one)"
        }
    }
}

// MARK: - The request's envelope

/// What every request object holds besides its verb's fields, and the names of all its fields.
struct RequestHeader: Decodable {
    var verb: String?
    var version: Int?
    var keys: Set<String>

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        keys = Set(container.allKeys.map(\.stringValue))
        verb = try container.decodeIfPresent(String.self, forKey: AnyKey(stringValue: "verb"))
        version = try container.decodeIfPresent(Int.self, forKey: AnyKey(stringValue: "version"))
    }
}

/// A request's fields, its verb and the version, in one JSON object.
struct RequestEnvelope<Request: GuardianRequest>: Encodable {
    let request: Request
    enum Keys: String, CodingKey { case verb, version }

    func encode(to encoder: Encoder) throws {
        try request.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(Request.verb, forKey: .verb)
        try container.encode(GuardianProtocol.version, forKey: .version)
    }
}
