/// An error from ServiceSupport: what was being done, what went wrong, the
/// underlying cause as the system reported it, and what the user can do.
///
/// Its `description` is one log line, e.g.
/// `Notify failed (dbusCallFailed): the notification server refused the notification
/// [org.freedesktop.DBus.Error.InvalidArgs: Type of message, "(s)", does not match ...]`.
public struct ServiceError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of failure, stable for code that wants to react to it.
    public enum Code: String, Sendable, Equatable {
        /// The D-Bus connection could not be opened or registered.
        case dbusConnectionFailed
        /// A D-Bus method call came back with an error or no reply in time.
        case dbusCallFailed
        /// The reply of a D-Bus call did not have the type the spec promises.
        case dbusBadReply
        /// libdbus ran out of memory building a message.
        case outOfMemory
        /// The notifier was closed, or the bus went away.
        case closed
        /// A file could not be read, written, renamed or removed.
        case fileSystem
        /// An external program (systemctl) could not be started.
        case processLaunchFailed
    }

    /// The kind of failure.
    public var code: Code
    /// What was being done, e.g. `"Notify"`, `"write unit file"`.
    public var operation: String
    /// What went wrong, and when there is something to do, what to do, in words.
    public var message: String
    /// The underlying cause as reported below us: a D-Bus error name and message,
    /// `errno` text, or an error thrown by Foundation.
    public var cause: String?
    /// The D-Bus error name when the cause is a D-Bus error
    /// (`org.freedesktop.DBus.Error.ServiceUnknown`, ...).
    public var dbusErrorName: String?

    /// Makes an error; see the properties for the meaning of each part.
    public init(code: Code, operation: String, message: String, cause: String? = nil, dbusErrorName: String? = nil) {
        self.code = code
        self.operation = operation
        self.message = message
        self.cause = cause
        self.dbusErrorName = dbusErrorName
    }

    public var description: String {
        var line = "\(operation) failed (\(code.rawValue)): \(message)"
        if let cause { line += " [\(cause)]" }
        return line
    }
}
