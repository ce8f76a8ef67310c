import MediaDecoding
import SensitivityAnalysis

/// What the agent tells the person, in the words of the mode: brief for adults, plain and gentle
/// for children. Never a detail that reveals what the content is.
public struct Notice: Sendable, Equatable {
    public var summary: String
    public var body: String
    /// What the person can do from the notification itself, after Apple's interventions:
    /// adult mode looks at the blurred preview, puts the file back or deletes it (the click is the
    /// decision, as Messages' one-word "Show"); child mode gets help, never the file back.
    public var actions: [Action] = []

    public init(summary: String, body: String, actions: [Action] = []) {
        self.summary = summary
        self.body = body
        self.actions = actions
    }

    /// A button on the notification.
    public enum Action: Sendable, Hashable {
        /// Open item N's blurred preview in the image viewer.
        case showPreview(Int64)
        /// Put item N back where it was (adult mode; the click is the consent).
        case putBack(Int64)
        /// Delete item N and block its bytes (adult mode; the click is the consent).
        case delete(Int64)
        /// Open the page with ways to talk to a trusted adult.
        case getHelp

        /// The button's text.
        public var label: String {
            switch self {
            case .showPreview: return "Show preview"
            case .putBack: return "Put back"
            case .delete: return "Delete"
            case .getHelp: return "Get help"
            }
        }

        /// The key the notification server hands back when the button is pressed.
        public var key: String {
            switch self {
            case .showPreview(let id): return "preview-\(id)"
            case .putBack(let id): return "put-back-\(id)"
            case .delete(let id): return "delete-\(id)"
            case .getHelp: return "help"
            }
        }

        /// The action a key names; nil for a key this program never sent.
        public init?(key: String) {
            if key == "help" { self = .getHelp; return }
            for (prefix, make) in [("preview-", Action.showPreview), ("put-back-", Action.putBack), ("delete-", Action.delete)] as [(String, (Int64) -> Action)] {
                if key.hasPrefix(prefix), let id = Int64(key.dropFirst(prefix.count)), id > 0 { self = make(id); return }
            }
            return nil
        }

        /// The buttons a notice about item `id` offers in `mode`.
        static func offered(for id: Int64, in mode: AnalysisMode) -> [Action] {
            mode == .child ? [.getHelp] : [.showPreview(id), .putBack(id), .delete(id)]
        }
    }

    /// Why a file was hidden.
    public enum HiddenBecause: Sendable, Equatable {
        /// The analysis found it may be sensitive.
        case flagged
        /// Its bytes are on the block list (blocked before).
        case blockedBytes
        /// It was downloaded from a site on the block list.
        case blockedSite
    }

    /// A protected account asked for item `id` (`name`) back: told on a guardian's desktop.
    public static func releaseRequested(user: String, id: Int64, name: String) -> Notice {
        Notice(summary: "\(user) asks for a picture back",
               body: "\(name) (item \(id)) was hidden in \(user)'s account. Look at it together: quarantine show --user \(user) \(id); "
                   + "then 'quarantine release --user \(user) \(id)' or 'quarantine block --user \(user) \(id)'.")
    }

    /// A file was hidden in the vault as item `id`.
    public static func hidden(id: Int64, kind: MediaType.Kind, mode: AnalysisMode, because: HiddenBecause = .flagged) -> Notice {
        let thing = kind == .video ? "video" : kind == .container ? "file" : "photo"
        let actions = Action.offered(for: id, in: mode)
        switch mode {
        case .adult:
            let summary: String
            switch because {
            case .flagged: summary = "Hidden a \(thing) that may be sensitive"
            case .blockedBytes: summary = "Hidden a \(thing) you blocked before"
            case .blockedSite: summary = "Hidden a \(thing) from a site you blocked"
            }
            return Notice(summary: summary, body: "quarantine show \(id)", actions: actions)
        case .child:
            let picture = kind == .video ? "a video" : kind == .container ? "a file" : "a picture"
            let what: String
            switch because {
            case .flagged: what = "\(picture.prefix(1).uppercased() + picture.dropFirst()) that arrived might show private parts of the body."
            case .blockedBytes: what = "\(picture.prefix(1).uppercased() + picture.dropFirst()) that was put away before arrived again."
            case .blockedSite: what = "\(picture.prefix(1).uppercased() + picture.dropFirst()) from a website that is blocked arrived."
            }
            return Notice(summary: "We put \(picture) away for you",
                          body: what + " It is kept safe and blurred, and you don't have to look at it. "
                              + "If you want, talk to a grown-up you trust. (Number \(id))", actions: actions)
        }
    }

    /// A file could not be checked and was held in the vault as item `id` (on_error = hold).
    public static func held(id: Int64, kind: MediaType.Kind, mode: AnalysisMode) -> Notice {
        let thing = kind == .video ? "video" : kind == .container ? "file" : "picture"
        switch mode {
        case .adult:
            return Notice(summary: "Held a \(thing) that could not be checked", body: "quarantine show \(id)", actions: Action.offered(for: id, in: mode))
        case .child:
            return Notice(summary: "We put a \(thing) away to be safe",
                          body: "We could not check a \(thing) that arrived, so we kept it safe. A grown-up can look at it with you. (Number \(id))",
                          actions: Action.offered(for: id, in: mode))
        }
    }

    /// A file could not be checked and was left where it is (on_error = leave).
    public static func left(name: String, reason: String, mode: AnalysisMode) -> Notice {
        switch mode {
        case .adult:
            return Notice(summary: "Could not check \(name)", body: "\(reason). It was left where it is.")
        case .child:
            return Notice(summary: "We could not check \(name)",
                          body: "It was left where it is. If you are not sure about it, ask a grown-up before you open it.")
        }
    }
}
