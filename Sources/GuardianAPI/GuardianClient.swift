import Foundation
import ServiceSupport

/// The CLI's end of a guardian service's socket: sends one verb's request, reads its answer.
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

    /// Sends `request`; its answer and a preview descriptor when one came (the caller closes it).
    public func send<Request: GuardianRequest>(_ request: Request) throws -> (GuardianAnswer<Request.Answer>, preview: Int32?) {
        try sendOne(request)
    }

    /// Sends a paged `request`; the whole answer (every page, fetched one after another) and the
    /// first page's preview descriptor when one came (the caller closes it).
    public func send<Request: GuardianPagedRequest>(_ request: Request) throws -> (GuardianAnswer<Request.Answer>, preview: Int32?) {
        var (answer, preview) = try sendOne(request)
        var page = request
        var pages = 1
        while answer.refusal == nil, var whole = answer.answer, whole.more, let next = whole.next, pages < Self.maxPages {
            // The cursor must go down, or a broken service would keep this asking for ever.
            guard page.before.map({ next < $0 }) ?? true else { break }
            page.before = next
            let (more, extra) = try sendOne(page)
            if let extra { close(extra) }
            if let refusal = more.refusal { answer.refusal = refusal; break }
            guard let body = more.answer else { break }
            whole.append(page: body)
            answer.answer = whole
            pages += 1
        }
        if answer.refusal != nil, let open = preview { close(open); preview = nil }
        return (answer, preview)
    }

    /// Sends `request` and reads one answer message (one page).
    public func sendOne<Request: GuardianRequest>(_ request: Request) throws -> (GuardianAnswer<Request.Answer>, preview: Int32?) {
        do { try socket.send(GuardianProtocol.encode(request)) } catch {
            // A service that refused this account sent its reason first, then closed: the send
            // fails (EPIPE) while the reason waits to be read.
            if let answer = reasonLeftBehind(Request.Answer.self) { return (answer, nil) }
            throw closedError(cause: error)
        }
        let message: LocalSocket.Message?
        do { message = try socket.receive(maxLength: GuardianProtocol.maxMessage) } catch {
            // Closed with this request unread: the kernel reports ECONNRESET first, and the
            // reason sent before the close comes on the next read.
            if let answer = reasonLeftBehind(Request.Answer.self) { return (answer, nil) }
            throw closedError(cause: error)
        }
        guard let message else { throw closedError(cause: nil) }
        guard let answer = try? GuardianProtocol.decodeAnswer(Request.Answer.self, from: message.bytes),
              answer.refusal != nil || (answer.verb == Request.verb && answer.answer != nil) else {
            message.descriptors.forEach { close($0) }
            throw ServiceError(code: .closed, operation: "guardian request", message: "the guardian service for \(paths.user) sent an answer this quarantine does not understand (a different version?)")
        }
        let preview = message.descriptors.first
        message.descriptors.dropFirst().forEach { close($0) }
        return (answer, preview)
    }

    /// The refusal a service sent before closing the connection, if one is still to be read
    /// (a reset is reported before it, so two reads are tried).
    func reasonLeftBehind<Body>(_ type: Body.Type) -> GuardianAnswer<Body>? {
        for _ in 0..<2 {
            let reason: LocalSocket.Message?
            do { reason = try socket.receive(maxLength: GuardianProtocol.maxMessage) } catch { continue }
            guard let reason else { return nil }
            reason.descriptors.forEach { close($0) }
            return try? GuardianProtocol.decodeAnswer(Body.self, from: reason.bytes)
        }
        return nil
    }

    func closedError(cause: Error?) -> ServiceError {
        ServiceError(code: .closed, operation: "guardian request",
                     message: "the guardian service for \(paths.user) closed the connection without an answer: only \(paths.user), root and members of \(GuardianPaths.guardiansGroup) may use it, and each account may hold only a few connections at once",
                     cause: cause.map { "\($0)" })
    }
}
