#if canImport(Glibc)
import Glibc
#endif
import CSystemShims

/// A Unix-domain `SOCK_SEQPACKET` socket: whole messages, with open descriptors passed alongside
/// (`SCM_RIGHTS`) and the peer's process, user and group known from the kernel (`SO_PEERCRED`).
/// The guardian service's API and the analysis worker talk through these: a file is handed over
/// as an open descriptor, never by name, and a request is believed only for the user the kernel
/// says sent it. Owns its descriptor; ``close()`` (or deinit) closes it.
public final class LocalSocket: @unchecked Sendable {
    /// The largest message ``receive(maxLength:)`` takes by default.
    public static let defaultMaxLength = 64 << 10
    /// The most descriptors one message carries.
    public static let maxDescriptors = 16

    public private(set) var descriptor: Int32

    public init(adopting descriptor: Int32) { self.descriptor = descriptor }

    deinit { close() }

    public func close() {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        descriptor = -1
    }

    /// Who is at the other end, as the kernel recorded it when the connection was made.
    public struct Peer: Sendable, Equatable {
        public var pid: Int32
        public var uid: uid_t
        public var gid: gid_t

        public init(pid: Int32, uid: uid_t, gid: gid_t) {
            self.pid = pid
            self.uid = uid
            self.gid = gid
        }
    }

    /// One message: its bytes and the descriptors that came with it (the receiver owns them).
    public struct Message: Sendable {
        public var bytes: [UInt8]
        public var descriptors: [Int32]
    }

    /// Two connected sockets (for a parent and the worker it starts).
    public static func pair() throws(ServiceError) -> (LocalSocket, LocalSocket) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw Self.failure("socketpair", "cannot make a socket pair")
        }
        return (LocalSocket(adopting: fds[0]), LocalSocket(adopting: fds[1]))
    }

    /// A listening socket at `path` with file mode `mode` (who may connect is decided by the
    /// folder's and the socket's modes, then by ``peer``). A socket left at `path` by an earlier
    /// run is replaced; anything else there is refused.
    public static func listen(at path: String, mode: mode_t, backlog: Int32 = 16) throws(ServiceError) -> LocalSocket {
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else {
                throw ServiceError(code: .fileSystem, operation: "listen", message: "\(path) exists and is not a socket; refusing to replace it")
            }
            unlink(path)
        }
        let socket = try make()
        try withAddress(path) { (address, length) throws(ServiceError) in
            guard bind(socket.descriptor, address, length) == 0 else { throw failure("bind", "cannot create the socket \(path)") }
        }
        guard chmod(path, mode) == 0 else { throw failure("chmod", "cannot set the mode of \(path)") }
        guard Glibc.listen(socket.descriptor, backlog) == 0 else { throw failure("listen", "cannot listen on \(path)") }
        return socket
    }

    /// Connects to the socket at `path`.
    public static func connect(to path: String) throws(ServiceError) -> LocalSocket {
        let socket = try make()
        try withAddress(path) { (address, length) throws(ServiceError) in
            var result: Int32
            repeat { result = Glibc.connect(socket.descriptor, address, length) } while result < 0 && errno == EINTR
            guard result == 0 else { throw failure("connect", "cannot reach \(path)") }
        }
        return socket
    }

    /// The next connection (blocks, unless ``setNonBlocking()`` was called).
    public func accept() throws(ServiceError) -> LocalSocket {
        let fd = qsys_accept_cloexec(descriptor)
        guard fd >= 0 else { throw Self.failure("accept", "cannot accept a connection") }
        return LocalSocket(adopting: fd)
    }

    /// The next connection, or the `errno` of a failed `accept4` (EAGAIN when none is waiting on
    /// a non-blocking listener; EMFILE, ENFILE, ENOMEM, ECONNABORTED, ... for the caller to
    /// decide: a server backs off and goes on).
    public func acceptOrErrno() -> Result<LocalSocket, AcceptFailure> {
        let fd = qsys_accept_cloexec(descriptor)
        guard fd >= 0 else { return .failure(AcceptFailure(errno: errno)) }
        return .success(LocalSocket(adopting: fd))
    }

    /// A failed `accept4`: its `errno`.
    public struct AcceptFailure: Error, Sendable, Equatable, CustomStringConvertible {
        public var errno: Int32
        public init(errno: Int32) { self.errno = errno }
        public var description: String { "accept: \(String(cString: strerror(errno)))" }
    }

    /// Makes `accept` (and every other call) return at once instead of waiting.
    public func setNonBlocking() throws(ServiceError) {
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else { throw Self.failure("fcntl(O_NONBLOCK)", "cannot make the socket non-blocking") }
    }

    /// How long a ``receive(maxLength:)`` and a ``send(_:descriptors:)`` may wait (SO_RCVTIMEO,
    /// SO_SNDTIMEO; zero waits for ever): after that they fail with EAGAIN.
    public func setTimeouts(receive: Duration, send: Duration) throws(ServiceError) {
        for (option, duration) in [(SO_RCVTIMEO, receive), (SO_SNDTIMEO, send)] {
            let (seconds, attoseconds) = duration.components
            var value = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
            guard setsockopt(descriptor, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
                throw Self.failure("setsockopt(SO_RCVTIMEO/SO_SNDTIMEO)", "cannot set the socket's timeouts")
            }
        }
    }

    /// Ends both directions (`shutdown(SHUT_RDWR)`): the peer reads what was sent, then end of
    /// stream; the descriptor stays open until ``close()``.
    public func shutdownBoth() {
        if descriptor >= 0 { _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    /// The connected peer's credentials.
    public func peer() throws(ServiceError) -> Peer {
        var pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0
        guard qsys_peer_credentials(descriptor, &pid, &uid, &gid) == 0 else { throw Self.failure("getsockopt(SO_PEERCRED)", "cannot tell who is connected") }
        return Peer(pid: pid, uid: uid, gid: gid)
    }

    /// Sends one message, with `descriptors` (at most ``maxDescriptors``; the sender keeps its own).
    public func send(_ bytes: [UInt8], descriptors: [Int32] = []) throws(ServiceError) {
        guard descriptors.count <= Self.maxDescriptors else {
            throw ServiceError(code: .fileSystem, operation: "sendmsg", message: "at most \(Self.maxDescriptors) descriptors a message")
        }
        let sent = bytes.withUnsafeBytes { raw in
            descriptors.withUnsafeBufferPointer { fds in
                qsys_send_with_descriptors(descriptor, raw.baseAddress, raw.count, fds.baseAddress, Int32(fds.count))
            }
        }
        guard sent == bytes.count else { throw Self.failure("sendmsg", sent < 0 ? "cannot send" : "the message was cut short") }
    }

    /// The next message, or nil when the peer closed the connection. A message longer than
    /// `maxLength`, or with more than ``maxDescriptors`` descriptors, is refused: its
    /// descriptors are closed and an error thrown.
    public func receive(maxLength: Int = LocalSocket.defaultMaxLength) throws(ServiceError) -> Message? {
        var buffer = [UInt8](repeating: 0, count: maxLength + 1)
        var fds = [Int32](repeating: -1, count: Self.maxDescriptors)
        var count: Int32 = 0, truncated: Int32 = 0
        let received = buffer.withUnsafeMutableBytes { raw in
            fds.withUnsafeMutableBufferPointer { qsys_receive_with_descriptors(descriptor, raw.baseAddress, raw.count, $0.baseAddress, Int32(Self.maxDescriptors), &count, &truncated) }
        }
        guard received >= 0 else { throw Self.failure("recvmsg", "cannot receive") }
        let descriptors = Array(fds.prefix(Int(count)))
        if truncated != 0 || received > maxLength {
            descriptors.forEach { _ = Glibc.close($0) }
            throw ServiceError(code: .fileSystem, operation: "recvmsg", message: "a message over \(maxLength) bytes or \(Self.maxDescriptors) descriptors was refused")
        }
        if received == 0 && descriptors.isEmpty { return nil }
        return Message(bytes: Array(buffer.prefix(received)), descriptors: descriptors)
    }

    /// Whether `error` is ``receive(maxLength:)`` refusing a message (over the length, or with
    /// too many descriptors: the peer's doing), not the socket failing (`ECONNRESET` when the
    /// peer ended with messages unread, say).
    public static func isRefusal(_ error: any Error) -> Bool {
        guard let error = error as? ServiceError else { return false }
        return error.operation == "recvmsg" && error.cause == nil
    }

    // MARK: - Internals

    static func make() throws(ServiceError) -> LocalSocket {
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket", "cannot make a socket") }
        return LocalSocket(adopting: fd)
    }

    static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(ServiceError) -> Void) throws(ServiceError) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            throw ServiceError(code: .fileSystem, operation: "bind", message: "the socket path \(path) is over \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        try withUnsafePointer(to: &address) { (pointer) throws(ServiceError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (address) throws(ServiceError) in try body(address, length) }
        }
    }

    static func failure(_ operation: String, _ message: String) -> ServiceError {
        ServiceError(code: .fileSystem, operation: operation, message: message, cause: String(cString: strerror(errno)))
    }
}
