/// One desktop notification, as the freedesktop.org Desktop Notifications
/// Specification (1.2) describes it.
public struct DesktopNotification: Sendable, Equatable {
    /// The spec's `urgency` hint: servers may style or sort by it, and critical
    /// notifications usually stay until dismissed.
    public enum Urgency: UInt8, Sendable, Equatable {
        case low = 0
        case normal = 1
        case critical = 2
    }

    /// A button on the notification. When the user presses it the server emits
    /// `ActionInvoked` with `key`, which `DesktopNotifier.actionInvoked` delivers.
    public struct Action: Sendable, Equatable {
        /// Returned in `ActionInvoked`, never shown. `"default"` is the spec's key
        /// for clicking the notification itself.
        public var key: String
        /// The button's text.
        public var label: String

        public init(key: String, label: String) {
            self.key = key
            self.label = label
        }
    }

    /// The one-line title.
    public var summary: String
    /// The text under it. Servers with the `body-markup` capability read a small
    /// subset of markup: escape `&`, `<` and `>` in untrusted text (file names!).
    public var body: String
    /// Absolute path of an image to show, here the blurred preview JPEG of the
    /// quarantined item; sent as a `file://` URI. Never the original file.
    public var imagePath: String?
    /// The urgency hint.
    public var urgency: Urgency
    /// Buttons; sent only to servers with the `actions` capability.
    public var actions: [Action]
    /// How long the server shows it: -1 lets the server decide, 0 means until
    /// dismissed.
    public var timeoutMilliseconds: Int32

    /// Makes a notification; only `summary` is required.
    public init(summary: String, body: String = "", imagePath: String? = nil, urgency: Urgency = .normal,
                actions: [Action] = [], timeoutMilliseconds: Int32 = -1) {
        self.summary = summary
        self.body = body
        self.imagePath = imagePath
        self.urgency = urgency
        self.actions = actions
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// `text` with `&`, `<` and `>` escaped, for `body` on servers that read markup.
    public static func escapeMarkup(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default: out.append(c)
            }
        }
        return out
    }
}
