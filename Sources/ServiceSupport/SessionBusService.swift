#if canImport(Glibc)
import Glibc
#endif
import CDBus
import Foundation
import PollSupport

/// A service on the session bus, with libdbus directly: owns a well-known name, hands each
/// method call of the same user to a handler, and lets answers and signals be sent from any
/// thread.
///
/// ```swift
/// let service = try SessionBusService.start(address: address, name: "io.github.quarantine.Analysis1",
///     handler: { call in call.reply([.string("pong")]) },
///     callerGone: { sender in cancelJobs(of: sender) })
/// ...
/// service.stop()
/// ```
///
/// One private connection and one thread (`quarantine-bus`), asleep in `poll(2)` on the bus
/// socket and a ``WakePipe`` while nothing happens. Every caller is checked before its first
/// call reaches the handler: the bus says which account it runs as
/// (`GetConnectionUnixUser`), and only this process's own account is served; others get
/// `org.freedesktop.DBus.Error.AccessDenied`. Callers are followed by `NameOwnerChanged`, so
/// `callerGone` learns when one disconnects (its match rule is in place before its account is
/// asked, so a caller that leaves in between is seen leaving).
public final class SessionBusService: @unchecked Sendable {
    /// A method call, handed to the handler on the service's thread. Its arguments are read
    /// there (``arguments``); the answer (``reply(_:)`` or ``fail(_:_:)``) may come later,
    /// from any thread. An unanswered call is answered with an error when the last reference goes.
    public final class Call: @unchecked Sendable {
        /// The caller's unique name, e.g. `:1.42`.
        public let sender: String
        public let path: String
        public let interface: String
        public let member: String
        private let message: OpaquePointer
        private weak var service: SessionBusService?
        private let answered = NSLock()
        private var isAnswered = false

        init(message: OpaquePointer, service: SessionBusService) {
            dbus_message_ref(message)
            self.message = message
            self.service = service
            sender = dbus_message_get_sender(message).map { String(cString: $0) } ?? ""
            path = dbus_message_get_path(message).map { String(cString: $0) } ?? ""
            interface = dbus_message_get_interface(message).map { String(cString: $0) } ?? ""
            member = dbus_message_get_member(message).map { String(cString: $0) } ?? ""
        }

        deinit {
            if !isAnswered {
                service?.sendError(to: message, name: "org.freedesktop.DBus.Error.Failed", text: "the service gave no answer")
            }
            dbus_message_unref(message)
        }

        /// The call's arguments, to be read in order (on the service's thread, in the handler).
        public func withArguments<T>(_ body: (inout DBusMessageReader) -> T) -> T {
            var reader = DBusMessageReader(message)
            return body(&reader)
        }

        /// The argument signature the caller sent, e.g. `"h"`.
        public var signature: String { dbus_message_get_signature(message).map { String(cString: $0) } ?? "" }

        /// Answers with `values`; later answers are ignored.
        public func reply(_ values: [DBusValue]) {
            guard claim() else { return }
            service?.sendReply(to: message, values)
        }

        /// Answers with the error `name` (e.g. `org.freedesktop.DBus.Error.InvalidArgs`).
        public func fail(_ name: String, _ text: String) {
            guard claim() else { return }
            service?.sendError(to: message, name: name, text: text)
        }

        private func claim() -> Bool {
            answered.lock()
            defer { answered.unlock() }
            if isAnswered { return false }
            isAnswered = true
            return true
        }
    }

    /// The well-known name this service owns.
    public let name: String
    /// Callers known at once (each holds a match rule on the bus): more are refused.
    public static let maxCallers = 64
    /// The service thread's name, as /proc/<pid>/task/<tid>/comm shows it.
    public static let threadName = "quarantine-bus"

    private let connection: OpaquePointer
    private let socketFD: Int32
    private let lock = NSLock()
    private let wakePipe: WakePipe
    private let handler: @Sendable (Call) -> Void
    private let callerGone: @Sendable (String) -> Void
    private let finished = DispatchSemaphore(value: 0)
    private var isClosed = false
    private var threadStarted = false
    private var threadEnded = false
    /// The account of each caller seen (nil: another account, refused).
    private var callers: [String: uid_t] = [:]
    private let ownUID = geteuid()

    private init(name: String, connection: OpaquePointer, socketFD: Int32, wakePipe: WakePipe,
                 handler: @escaping @Sendable (Call) -> Void, callerGone: @escaping @Sendable (String) -> Void) {
        self.name = name
        self.connection = connection
        self.socketFD = socketFD
        self.wakePipe = wakePipe
        self.handler = handler
        self.callerGone = callerGone
    }

    /// Connects to the bus at `address`, takes `name` (never queued behind another owner) and
    /// starts serving. Throws a ``ServiceError`` when the bus cannot be reached, it cannot pass
    /// descriptors, or another program owns the name.
    public static func start(address: String, name: String, timeoutMilliseconds: Int32 = 2_000,
                             handler: @escaping @Sendable (Call) -> Void,
                             callerGone: @escaping @Sendable (String) -> Void) throws -> SessionBusService {
        dbus_threads_init_default()
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let raw = dbus_connection_open_private(address, &error) else {
            throw ServiceError(code: .dbusConnectionFailed, operation: "connect to the session bus",
                               message: "the session bus at \(address) cannot be reached", cause: describe(error))
        }
        dbus_connection_set_exit_on_disconnect(raw, 0)
        func fail(_ message: String, cause: String? = nil) -> ServiceError {
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            return ServiceError(code: .dbusConnectionFailed, operation: "serve \(name) on the session bus", message: message, cause: cause)
        }
        guard dbus_bus_register(raw, &error) != 0 else { throw fail("the bus did not register this connection", cause: describe(error)) }
        guard dbus_connection_can_send_type(raw, qdbus_type_unix_fd()) != 0 else {
            throw fail("this bus connection cannot pass descriptors (not a local socket?)")
        }
        let result = dbus_bus_request_name(raw, name, UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE), &error)
        guard result == DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER else {
            throw fail(result < 0 ? "the bus refused the name" : "another program owns \(name) already (another agent of this account?)",
                       cause: describe(error))
        }
        var fd: Int32 = -1
        guard dbus_connection_get_socket(raw, &fd) != 0, fd >= 0 else { throw fail("the bus connection has no socket to wait on") }
        let pipe: WakePipe
        do { pipe = try WakePipe() } catch { throw fail("could not make a wake-up pipe", cause: String(cString: strerror(error.code))) }
        let service = SessionBusService(name: name, connection: raw, socketFD: fd, wakePipe: pipe, handler: handler, callerGone: callerGone)
        service.threadStarted = true
        let thread = Thread { [service] in
            nameThread(SessionBusService.threadName)
            service.serve()
        }
        thread.start()
        return service
    }

    /// Stops the thread, closes the connection (the name is released with it). Idempotent.
    public func stop() {
        lock.lock()
        if isClosed { lock.unlock(); return }
        isClosed = true
        lock.unlock()
        wakePipe.wake()
        if threadStarted { finished.wait() }
        lock.lock()
        dbus_connection_flush(connection)
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
        lock.unlock()
    }

    deinit { stop() }

    /// True while the service's thread serves: false once the bus connection is lost (the
    /// session ended, the bus went away) or ``stop()`` was called.
    public var isServing: Bool {
        lock.lock()
        defer { lock.unlock() }
        return !isClosed && !threadEnded
    }

    // MARK: - Sending (any thread)

    /// Sends a signal from `path`; with `destination`, to that caller alone.
    public func signal(path: String, interface: String, member: String, _ values: [DBusValue], destination: String? = nil) {
        guard let message = dbus_message_new_signal(path, interface, member) else { return }
        defer { dbus_message_unref(message) }
        if let destination { dbus_message_set_destination(message, destination) }
        guard DBusMessageWriter.append(values, to: message) else { return }
        send(message)
    }

    /// Sends `org.freedesktop.DBus.Properties.PropertiesChanged` for `interface` at `path`.
    public func propertiesChanged(path: String, interface: String, _ changed: [(String, DBusValue)], destination: String? = nil) {
        signal(path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
               [.string(interface), .variantDictionary(changed), .stringArray([])], destination: destination)
    }

    fileprivate func sendReply(to call: OpaquePointer, _ values: [DBusValue]) {
        guard let message = dbus_message_new_method_return(call) else { return }
        defer { dbus_message_unref(message) }
        guard DBusMessageWriter.append(values, to: message) else {
            sendError(to: call, name: "org.freedesktop.DBus.Error.NoMemory", text: "the answer could not be built")
            return
        }
        send(message)
    }

    fileprivate func sendError(to call: OpaquePointer, name: String, text: String) {
        guard dbus_message_get_no_reply(call) == 0, let message = dbus_message_new_error(call, name, text) else { return }
        defer { dbus_message_unref(message) }
        send(message)
    }

    private func send(_ message: OpaquePointer) {
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else { return }
        _ = dbus_connection_send(connection, message, nil)
        // The thread writes it out (and waits for the socket to take it when it is full).
        wakePipe.wake()
    }

    // MARK: - The thread

    private func serve() {
        defer {
            lock.lock()
            threadEnded = true
            lock.unlock()
            finished.signal()
        }
        var fds = [pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0), wakePipe.pollDescriptor]
        while true {
            // Everything already read (also what a blocking call below queued) first.
            while let message = nextMessage() {
                handle(message)
                dbus_message_unref(message)
            }
            lock.lock()
            if isClosed { lock.unlock(); return }
            let connected = dbus_connection_get_is_connected(connection) != 0
            let writing = dbus_connection_has_messages_to_send(connection) != 0
            lock.unlock()
            guard connected else { return }
            fds[0].events = Int16(POLLIN) | (writing ? Int16(POLLOUT) : 0)
            fds[0].revents = 0
            fds[1].revents = 0
            // No timeout: no CPU while nothing arrives and nothing waits to be written.
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { wakePipe.drain() }
            lock.lock()
            if !isClosed { _ = dbus_connection_read_write(connection, 0) }
            lock.unlock()
        }
    }

    private func nextMessage() -> OpaquePointer? {
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else { return nil }
        return dbus_connection_pop_message(connection)
    }

    private func handle(_ message: OpaquePointer) {
        let type = dbus_message_get_type(message)
        if type == qdbus_message_signal() {
            guard dbus_message_is_signal(message, "org.freedesktop.DBus", "NameOwnerChanged") != 0,
                  dbus_message_get_sender(message).map({ String(cString: $0) }) == "org.freedesktop.DBus" else { return }
            var reader = DBusMessageReader(message)
            guard let gone = reader.string(), let _ = reader.string(), let newOwner = reader.string(),
                  gone.hasPrefix(":"), newOwner.isEmpty else { return }
            forget(gone)
            return
        }
        guard type == qdbus_message_method_call() else { return }
        let call = Call(message: message, service: self)
        guard !call.sender.isEmpty else {
            call.fail("org.freedesktop.DBus.Error.AccessDenied", "calls must come through the bus")
            return
        }
        switch admit(call.sender) {
        case .served:
            handler(call)
        case .otherAccount(let uid):
            call.fail("org.freedesktop.DBus.Error.AccessDenied",
                      "this service answers its own account (uid \(ownUID)) only; the caller runs as uid \(uid)")
        case .tooMany:
            call.fail("org.freedesktop.DBus.Error.LimitsExceeded", "\(Self.maxCallers) programs use this service already")
        case .gone:
            call.fail("org.freedesktop.DBus.Error.Failed", "the caller left the bus")
        }
    }

    private enum Admission { case served, otherAccount(uid_t), tooMany, gone }

    /// Whether `sender` runs as this account: asked of the bus once per caller, after its
    /// `NameOwnerChanged` rule is in place.
    private func admit(_ sender: String) -> Admission {
        lock.lock()
        defer { lock.unlock() }
        if let uid = callers[sender] { return uid == ownUID ? .served : .otherAccount(uid) }
        guard callers.count < Self.maxCallers else { return .tooMany }
        // Without an error argument AddMatch is sent without waiting; the bus handles it before
        // the call below, which comes after it on this connection.
        dbus_bus_add_match(connection, Self.goneRule(sender), nil)
        guard let uid = unixUser(of: sender) else {
            dbus_bus_remove_match(connection, Self.goneRule(sender), nil)
            return .gone
        }
        callers[sender] = uid
        return uid == ownUID ? .served : .otherAccount(uid)
    }

    /// `GetConnectionUnixUser`, blocking for at most 2 s. Caller holds the lock.
    private func unixUser(of sender: String) -> uid_t? {
        guard let message = dbus_message_new_method_call("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                         "org.freedesktop.DBus", "GetConnectionUnixUser") else { return nil }
        defer { dbus_message_unref(message) }
        guard DBusMessageWriter.append([.string(sender)], to: message) else { return nil }
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let reply = dbus_connection_send_with_reply_and_block(connection, message, 2_000, &error) else { return nil }
        defer { dbus_message_unref(reply) }
        var reader = DBusMessageReader(reply)
        return reader.uint32().map { uid_t($0) }
    }

    private func forget(_ sender: String) {
        lock.lock()
        let known = callers.removeValue(forKey: sender) != nil
        if known, !isClosed { dbus_bus_remove_match(connection, Self.goneRule(sender), nil) }
        lock.unlock()
        if known { callerGone(sender) }
    }

    private static func goneRule(_ sender: String) -> String {
        "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(sender)'"
    }

    private static func describe(_ error: DBusError) -> String? {
        guard let name = error.name else { return nil }
        return "\(String(cString: name)): \(error.message.map { String(cString: $0) } ?? "")"
    }
}

/// Names the calling thread for ps, top and gdb (15 bytes at most on Linux).
private func nameThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    _ = write(fd, name, min(name.utf8.count, 15))
    close(fd)
}
