#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CDBus
import PollSupport
import Foundation

/// Shows desktop notifications through the session bus's
/// `org.freedesktop.Notifications` server (GNOME Shell, KDE Plasma, dunst,
/// mako, xfce4-notifyd, ...), with libdbus directly.
///
/// ```swift
/// if let notifier = DesktopNotifier.connect() {       // nil: no desktop to tell
///     let id = try notifier.send(DesktopNotification(summary: "Moved 1 file to the vault",
///                                                    imagePath: previewPath,
///                                                    actions: [.init(key: "review", label: "Review")]))
///     for await (id, key) in notifier.actionInvoked { ... }
/// }
/// ```
///
/// One connection per notifier, private to it. A reader thread, asleep in
/// `poll(2)` while nothing arrives, delivers `ActionInvoked` signals for the
/// notifications this notifier sent. All methods may be called from any thread.
public final class DesktopNotifier: Sendable {
    /// The well-known name, object path and interface of the spec.
    public static let busName = "org.freedesktop.Notifications"
    public static let objectPath = "/org/freedesktop/Notifications"
    public static let interface = "org.freedesktop.Notifications"
    /// `app_name` and the `desktop-entry` hint sent with every notification.
    public static let applicationName = "quarantine"

    /// What `GetServerInformation` returned.
    public struct ServerInformation: Sendable, Equatable {
        public var name: String
        public var vendor: String
        public var version: String
        /// The version of the specification the server implements, e.g. "1.2".
        public var specificationVersion: String
    }

    /// The server's capabilities (`GetCapabilities`), fetched once at connect:
    /// e.g. "actions", "body", "body-markup", "body-images", "persistence".
    public let capabilities: Set<String>
    /// What the server says it is, fetched once at connect.
    public let serverInformation: ServerInformation
    /// The server's name, e.g. "gnome-shell" or "dunst".
    public var serverName: String { serverInformation.name }

    /// `ActionInvoked` signals for notifications this notifier sent: the
    /// notification id `send` returned and the action's key (`"default"` for a
    /// click on the notification itself). Ends when the notifier is closed or
    /// the bus goes away. One consumer; the newest 64 are kept when nobody reads.
    public let actionInvoked: AsyncStream<(id: UInt32, key: String)>

    private let connection: BusConnection
    /// How long `send` waits for the server's reply.
    private static let callTimeoutMilliseconds: Int32 = 5_000

    private init(connection: BusConnection, capabilities: Set<String>, serverInformation: ServerInformation,
                 actionInvoked: AsyncStream<(id: UInt32, key: String)>) {
        self.connection = connection
        self.capabilities = capabilities
        self.serverInformation = serverInformation
        self.actionInvoked = actionInvoked
    }

    deinit { connection.close() }

    /// Connects to the session bus named by `DBUS_SESSION_BUS_ADDRESS` in
    /// `environment` and asks the notification server what it can do.
    ///
    /// Returns nil, without throwing, when there is nobody to notify: the
    /// variable is unset or empty, the bus cannot be reached, or no server owns
    /// (or can be activated for) `org.freedesktop.Notifications` in time. Takes
    /// at most about `timeout` (1 s) in all, however the bus behaves.
    public static func connect(environment: [String: String] = ProcessInfo.processInfo.environment,
                               timeout: Duration = .seconds(1)) -> DesktopNotifier? {
        try? connectOrThrow(environment: environment, timeout: timeout)
    }

    /// Like `connect`, but says why there is no notifier: throws a
    /// `ServiceError` when the bus or the server could not be reached, returns nil
    /// only when `DBUS_SESSION_BUS_ADDRESS` is unset. For a diagnostic command.
    public static func connectOrThrow(environment: [String: String] = ProcessInfo.processInfo.environment,
                                      timeout: Duration = .seconds(1)) throws -> DesktopNotifier? {
        guard let rawAddress = environment["DBUS_SESSION_BUS_ADDRESS"], !rawAddress.isEmpty else { return nil }
        // autolaunch: would start dbus-launch (and wait for X11): never from an agent.
        let address = rawAddress.split(separator: ";").filter { !$0.hasPrefix("autolaunch:") }.joined(separator: ";")
        guard !address.isEmpty else {
            throw ServiceError(code: .dbusConnectionFailed, operation: "connect to the session bus",
                               message: "DBUS_SESSION_BUS_ADDRESS only offers autolaunch:, which this agent does not use",
                               cause: rawAddress)
        }
        let deadline = ContinuousClock.now + timeout
        func remainingMilliseconds() -> Int32 {
            let left = ContinuousClock.now.duration(to: deadline).components
            let ms = left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000
            return Int32(clamping: max(ms, 1))
        }

        let bus = try BusConnection.open(address: address, timeoutMilliseconds: remainingMilliseconds())
        do {
            let capabilitiesReply = try bus.call(destination: busName, path: objectPath, interface: interface,
                                                 method: "GetCapabilities", arguments: [],
                                                 timeoutMilliseconds: remainingMilliseconds())
            defer { dbus_message_unref(capabilitiesReply) }
            var reader = DBusMessageReader(capabilitiesReply)
            guard let capabilities = reader.stringArray() else {
                throw ServiceError(code: .dbusBadReply, operation: "GetCapabilities",
                                   message: "the notification server's reply is not an array of strings (as)")
            }
            let serverUniqueName = dbus_message_get_sender(capabilitiesReply).map { String(cString: $0) }

            let infoReply = try bus.call(destination: busName, path: objectPath, interface: interface,
                                         method: "GetServerInformation", arguments: [],
                                         timeoutMilliseconds: remainingMilliseconds())
            defer { dbus_message_unref(infoReply) }
            var infoReader = DBusMessageReader(infoReply)
            guard let name = infoReader.string(), let vendor = infoReader.string(),
                  let version = infoReader.string(), let spec = infoReader.string() else {
                throw ServiceError(code: .dbusBadReply, operation: "GetServerInformation",
                                   message: "the notification server's reply is not four strings (ssss)")
            }

            // Signals from the server that owns the name now; a match rule is needed
            // because the spec lets servers broadcast them.
            var rule = "type='signal',path='\(objectPath)',interface='\(interface)'"
            if let serverUniqueName { rule += ",sender='\(serverUniqueName)'" }
            let matchReply = try bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                          interface: "org.freedesktop.DBus", method: "AddMatch",
                                          arguments: [.string(rule)], timeoutMilliseconds: remainingMilliseconds())
            dbus_message_unref(matchReply)

            let (stream, continuation) = AsyncStream<(id: UInt32, key: String)>.makeStream(bufferingPolicy: .bufferingNewest(64))
            try bus.startReader(serverUniqueName: serverUniqueName, continuation: continuation)
            return DesktopNotifier(connection: bus, capabilities: Set(capabilities),
                                   serverInformation: ServerInformation(name: name, vendor: vendor, version: version,
                                                                        specificationVersion: spec),
                                   actionInvoked: stream)
        } catch {
            bus.close()
            throw error
        }
    }

    /// Shows `notification` (or replaces notification `replacing`, when not 0)
    /// and returns the id the server gave it.
    ///
    /// Sends `app_name` "quarantine", the hints `urgency` (byte),
    /// `desktop-entry` "quarantine", and for an image both `image-path` (spec
    /// 1.2) and `image_path` (1.1 servers) as a `file://` URI. Actions are sent
    /// only when the server has the `actions` capability.
    /// - Throws: `ServiceError` with the D-Bus error name and message when the
    ///   server refuses or does not answer within 5 s, `.closed` after `close()`.
    @discardableResult
    public func send(_ notification: DesktopNotification, replacing: UInt32 = 0) throws -> UInt32 {
        var actions: [String] = []
        if capabilities.contains("actions") {
            for action in notification.actions { actions += [action.key, action.label] }
        }
        var hints: [(String, DBusValue)] = [
            ("urgency", .byte(notification.urgency.rawValue)),
            ("desktop-entry", .string(Self.applicationName)),
        ]
        if let imagePath = notification.imagePath {
            let uri = URL(fileURLWithPath: imagePath).absoluteString
            hints.append(("image-path", .string(uri)))
            hints.append(("image_path", .string(uri)))
        }
        let arguments: [DBusValue] = [
            .string(Self.applicationName), .uint32(replacing), .string(""),
            .string(notification.summary), .string(notification.body),
            .stringArray(actions), .variantDictionary(hints), .int32(notification.timeoutMilliseconds),
        ]
        return try connection.call(destination: Self.busName, path: Self.objectPath, interface: Self.interface,
                                   method: "Notify", arguments: arguments,
                                   timeoutMilliseconds: Self.callTimeoutMilliseconds) { reply in
            var reader = DBusMessageReader(reply)
            guard let id = reader.uint32() else {
                throw ServiceError(code: .dbusBadReply, operation: "Notify",
                                   message: "the notification server's reply is not a notification id (u)")
            }
            return id
        } whileLocked: { id in
            // Under the connection's lock, before the reader can look at any signal
            // that came after the reply.
            self.connection.track(id)
        }
    }

    /// Asks the server to take notification `id` down (`CloseNotification`).
    public func withdraw(_ id: UInt32) throws {
        _ = try connection.call(destination: Self.busName, path: Self.objectPath, interface: Self.interface,
                                method: "CloseNotification", arguments: [.uint32(id)],
                                timeoutMilliseconds: Self.callTimeoutMilliseconds) { _ in () } whileLocked: { _ in }
    }

    /// Stops the reader thread, closes the connection and ends `actionInvoked`.
    /// Idempotent; also done when the notifier is released. Waits for a `send`
    /// in progress on another thread (at most its 5 s reply timeout).
    public func close() {
        connection.close()
    }
}

/// A private libdbus connection and its reader thread. Every libdbus call on it
/// happens under `lock`, so the reader never spins on data another thread's
/// blocking call is about to consume; that makes it safe to share
/// (`@unchecked Sendable`). libdbus's own locking is on too
/// (`dbus_threads_init_default`).
final class BusConnection: @unchecked Sendable {
    private let connection: OpaquePointer
    private let lock = NSLock()
    private let socketFD: Int32
    /// The reader sleeps in poll() on the socket and on this pipe; waking it
    /// (after a call, and on close) makes it look again.
    private var wakePipe: WakePipe?
    private var isClosed = false
    private var trackedIDs: Set<UInt32> = []
    private var trackedOrder: [UInt32] = []
    private var serverUniqueName: String?
    private var continuation: AsyncStream<(id: UInt32, key: String)>.Continuation?
    private let readerExited = DispatchSemaphore(value: 0)
    private var readerStarted = false

    /// The reader thread's name, as /proc/<pid>/task/<tid>/comm shows it.
    static let readerThreadName = "quarantine-dbus"

    private init(connection: OpaquePointer, socketFD: Int32) {
        self.connection = connection
        self.socketFD = socketFD
    }

    /// Opens a private connection to `address` and says Hello within the timeout
    /// (`dbus_bus_register` would wait 25 s for a bus that does not answer).
    static func open(address: String, timeoutMilliseconds: Int32) throws -> BusConnection {
        // Must precede every other libdbus call for libdbus to lock its own state.
        dbus_threads_init_default()
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let raw = dbus_connection_open_private(address, &error) else {
            throw ServiceError(code: .dbusConnectionFailed, operation: "connect to the session bus",
                               message: "the session bus at \(address) cannot be reached; notifications are off",
                               cause: Self.describe(error), dbusErrorName: Self.name(of: error))
        }
        dbus_connection_set_exit_on_disconnect(raw, 0)
        var fd: Int32 = -1
        guard dbus_connection_get_socket(raw, &fd) != 0, fd >= 0 else {
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            throw ServiceError(code: .dbusConnectionFailed, operation: "connect to the session bus",
                               message: "the bus connection has no socket to wait on", cause: address)
        }
        let bus = BusConnection(connection: raw, socketFD: fd)
        do {
            let reply = try bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                     interface: "org.freedesktop.DBus", method: "Hello", arguments: [],
                                     timeoutMilliseconds: timeoutMilliseconds)
            defer { dbus_message_unref(reply) }
            var reader = DBusMessageReader(reply)
            guard let uniqueName = reader.string(), dbus_bus_set_unique_name(raw, uniqueName) != 0 else {
                throw ServiceError(code: .dbusBadReply, operation: "Hello",
                                   message: "the bus did not give this connection a name")
            }
        } catch {
            bus.close()
            throw error
        }
        return bus
    }

    /// Calls a method and returns the reply, which the caller must unref.
    func call(destination: String, path: String, interface: String, method: String, arguments: [DBusValue],
              timeoutMilliseconds: Int32) throws -> OpaquePointer {
        try call(destination: destination, path: path, interface: interface, method: method, arguments: arguments,
                 timeoutMilliseconds: timeoutMilliseconds) { reply in
            dbus_message_ref(reply)
            return reply
        } whileLocked: { _ in }
    }

    /// Calls a method, decodes the reply with `decode`, then runs `whileLocked`
    /// on the result before any other thread can touch the connection.
    func call<T>(destination: String, path: String, interface: String, method: String, arguments: [DBusValue],
                 timeoutMilliseconds: Int32, decode: (OpaquePointer) throws -> T,
                 whileLocked: (T) -> Void) throws -> T {
        guard let message = dbus_message_new_method_call(destination, path, interface, method) else {
            throw ServiceError(code: .outOfMemory, operation: method, message: "libdbus could not allocate the message")
        }
        defer { dbus_message_unref(message) }
        guard DBusMessageWriter.append(arguments, to: message) else {
            throw ServiceError(code: .outOfMemory, operation: method,
                               message: "libdbus could not add the arguments to the message")
        }
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }

        lock.lock()
        defer {
            // The call may have queued signals that arrived meanwhile: let the reader look.
            if !isClosed { wakeReader() }
            lock.unlock()
        }
        guard !isClosed else {
            throw ServiceError(code: .closed, operation: method, message: "the notifier was closed")
        }
        guard let reply = dbus_connection_send_with_reply_and_block(connection, message, timeoutMilliseconds, &error) else {
            let name = Self.name(of: error)
            let what: String
            switch name {
            case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
                what = "no program on the session bus answers to \(destination); notifications are off until one does"
            case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout":
                what = "\(destination) did not answer within \(timeoutMilliseconds) ms"
            case "org.freedesktop.DBus.Error.Disconnected", "org.freedesktop.DBus.Error.NoServer":
                what = "the session bus connection is gone (the desktop session ended?)"
            default:
                what = "\(destination) refused \(interface).\(method)"
            }
            throw ServiceError(code: .dbusCallFailed, operation: method, message: what,
                               cause: Self.describe(error), dbusErrorName: name)
        }
        defer { dbus_message_unref(reply) }
        let value = try decode(reply)
        whileLocked(value)
        return value
    }

    /// Remembers a notification id whose ActionInvoked signals are ours. Caller holds the lock.
    func track(_ id: UInt32) {
        guard trackedIDs.insert(id).inserted else { return }
        trackedOrder.append(id)
        if trackedOrder.count > 1024 {
            trackedIDs.remove(trackedOrder.removeFirst())
        }
    }

    /// Starts the reader thread that delivers ActionInvoked to `continuation`.
    func startReader(serverUniqueName: String?, continuation: AsyncStream<(id: UInt32, key: String)>.Continuation) throws {
        let pipe: WakePipe
        do { pipe = try WakePipe() } catch {
            throw ServiceError(code: .fileSystem, operation: "start the notification reader",
                               message: "could not make a wake-up pipe", cause: String(cString: strerror(error.code)))
        }
        lock.lock()
        wakePipe = pipe
        self.serverUniqueName = serverUniqueName
        self.continuation = continuation
        readerStarted = true
        lock.unlock()
        let thread = Thread { [self] in
            nameCurrentThread(BusConnection.readerThreadName)
            readLoop(pipe)
        }
        thread.start()
    }

    private func wakeReader() {
        wakePipe?.wake()
    }

    private func readLoop(_ pipe: WakePipe) {
        defer { readerExited.signal() }
        var fds = [pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0), pipe.pollDescriptor]
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            // Blocks with no timeout: no CPU while nothing arrives.
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            if fds[1].revents != 0 { pipe.drain() }
            lock.lock()
            if isClosed {
                lock.unlock()
                return
            }
            if fds[0].revents != 0 {
                _ = dbus_connection_read_write(connection, 0)
            }
            while let message = dbus_connection_pop_message(connection) {
                handle(message)
                dbus_message_unref(message)
            }
            let connected = dbus_connection_get_is_connected(connection) != 0
            if !connected {
                continuation?.finish()
                continuation = nil
            }
            lock.unlock()
            if !connected { return }
        }
    }

    /// Handles one incoming message. Caller holds the lock.
    private func handle(_ message: OpaquePointer) {
        if let expected = serverUniqueName {
            guard let sender = dbus_message_get_sender(message), String(cString: sender) == expected else { return }
        }
        if dbus_message_is_signal(message, DesktopNotifier.interface, "ActionInvoked") != 0 {
            var reader = DBusMessageReader(message)
            guard let id = reader.uint32(), let key = reader.string(), trackedIDs.contains(id) else { return }
            continuation?.yield((id: id, key: key))
        } else if dbus_message_is_signal(message, DesktopNotifier.interface, "NotificationClosed") != 0 {
            var reader = DBusMessageReader(message)
            if let id = reader.uint32(), trackedIDs.remove(id) != nil {
                trackedOrder.removeAll { $0 == id }
            }
        }
    }

    /// Stops the reader, closes and releases the connection. Idempotent.
    func close() {
        lock.lock()
        if isClosed {
            lock.unlock()
            return
        }
        isClosed = true
        let started = readerStarted
        lock.unlock()
        if started {
            wakeReader()
            readerExited.wait()
        }
        lock.lock()
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
        continuation?.finish()
        continuation = nil
        wakePipe = nil
        lock.unlock()
    }

    private static func name(of error: DBusError) -> String? {
        guard let name = error.name else { return nil }
        return String(cString: name)
    }

    private static func describe(_ error: DBusError) -> String? {
        guard let name = name(of: error) else { return nil }
        let message = error.message.map { String(cString: $0) } ?? ""
        return "\(name): \(message)"
    }
}

/// Names the calling thread for ps, top and gdb (15 bytes at most on Linux).
/// Glibc's Swift module does not offer pthread_setname_np; /proc does the same.
private func nameCurrentThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    _ = write(fd, name, min(name.utf8.count, 15))
    close(fd)
}
