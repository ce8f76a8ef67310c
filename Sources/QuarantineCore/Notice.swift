import MediaDecoding
import SensitivityAnalysis

/// What the agent tells the person, in the words of the mode: brief for adults, plain and gentle
/// for children. Never a detail that reveals what the content is.
public struct Notice: Sendable, Equatable {
    public var summary: String
    public var body: String

    /// A protected account asked for item `id` (`name`) back: told on a guardian's desktop.
    public static func releaseRequested(user: String, id: Int64, name: String) -> Notice {
        Notice(summary: "\(user) asks for a picture back",
               body: "\(name) (item \(id)) was hidden in \(user)'s account. Look at it together: quarantine show --user \(user) \(id); "
                   + "then 'quarantine release --user \(user) \(id)' or 'quarantine block --user \(user) \(id)'.")
    }

    /// A file was hidden in the vault as item `id`.
    public static func hidden(id: Int64, kind: MediaType.Kind, mode: AnalysisMode, blocked: Bool = false) -> Notice {
        let thing = kind == .video ? "video" : "photo"
        switch mode {
        case .adult:
            return Notice(summary: blocked ? "Hidden a \(thing) you blocked before" : "Hidden a \(thing) that may be sensitive",
                          body: "quarantine show \(id)")
        case .child:
            let picture = kind == .video ? "a video" : "a picture"
            return Notice(summary: "We put \(picture) away for you",
                          body: "\(picture.prefix(1).uppercased() + picture.dropFirst()) that arrived might show private parts of the body. "
                              + "It is kept safe and blurred, and you don't have to look at it. "
                              + "If you want, talk to a grown-up you trust. (Number \(id))")
        }
    }

    /// A file could not be checked and was held in the vault as item `id` (on_error = hold).
    public static func held(id: Int64, kind: MediaType.Kind, mode: AnalysisMode) -> Notice {
        let thing = kind == .video ? "video" : "picture"
        switch mode {
        case .adult:
            return Notice(summary: "Held a \(thing) that could not be checked", body: "quarantine show \(id)")
        case .child:
            return Notice(summary: "We put a \(thing) away to be safe",
                          body: "We could not check a \(thing) that arrived, so we kept it safe. A grown-up can look at it with you. (Number \(id))")
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
