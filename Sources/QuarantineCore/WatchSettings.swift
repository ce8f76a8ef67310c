import DownloadOrigins
import Foundation
import QuarantineStore
import SensitivityAnalysis
import QuarantineBase

/// The folders the agent watches, from the `[watch]` table.
///
/// `incoming` folders are where media arrives (downloads): what lands there is checked.
/// `outgoing` folders are shared or synced folders: what is put there is checked before it leaves;
/// they are watched in child mode only, as Communication Safety checks both directions.
public struct WatchSettings: Sendable, Equatable {
    /// nil: the download folder (`xdg-user-dir DOWNLOAD`, or `~/Downloads`).
    public var incoming: [String]?
    public var outgoing: [String]
    /// File or folder names never watched nor analysed.
    public var exclude: [String]

    /// None: a picture inside `node_modules`, `.git` or `.cache` in Downloads arrived like any
    /// other. Only the vault itself is never watched; the person's own `exclude` still applies.
    public static let defaultExclusions: [String] = []

    public init(incoming: [String]? = nil, outgoing: [String] = [], exclude: [String] = WatchSettings.defaultExclusions) {
        self.incoming = incoming
        self.outgoing = outgoing
        self.exclude = exclude
    }

    /// One folder and the direction it is checked in.
    public struct Root: Sendable, Hashable, Codable {
        public var path: String
        public var direction: FolderDirection
        public init(path: String, direction: FolderDirection) {
            self.path = path
            self.direction = direction
        }
    }

    /// The folders in force in `mode`, absolute, `~` expanded, each once (incoming first).
    public func roots(mode: AnalysisMode, environment: [String: String] = ProcessEnvironment.current) -> [Root] {
        var result: [Root] = []
        var seen = Set<String>()
        let incomingPaths = incoming ?? [Self.downloadFolder(environment: environment)]
        for path in incomingPaths {
            let absolute = Self.expand(path, environment: environment)
            if seen.insert(absolute).inserted { result.append(Root(path: absolute, direction: .incoming)) }
        }
        if mode == .child {
            for path in outgoing {
                let absolute = Self.expand(path, environment: environment)
                if seen.insert(absolute).inserted { result.append(Root(path: absolute, direction: .outgoing)) }
            }
        }
        return result
    }

    /// `~` and `~/...` expanded, relative paths made absolute, trailing slashes and `.` removed.
    public static func expand(_ path: String, environment: [String: String] = ProcessEnvironment.current) -> String {
        var text = path
        if text == "~" { text = Paths(environment: environment).home }
        else if text.hasPrefix("~/") { text = Paths(environment: environment).home + text.dropFirst(1) }
        if !text.hasPrefix("/") { text = FileManager.default.currentDirectoryPath + "/" + text }
        return URL(fileURLWithPath: text).standardizedFileURL.path
    }

    /// The user's download folder, as `xdg-user-dir DOWNLOAD` answers it, unless that is unset
    /// or the home folder itself (its answer when nothing is configured); then `~/Downloads`.
    ///
    /// Read from `${XDG_CONFIG_HOME:-~/.config}/user-dirs.dirs` in this process, as
    /// `xdg-user-dir` does: no child process, so it works inside the unit's sandbox (where
    /// Foundation's `Process` hangs without an AF_INET socket pair) and never blocks a reload.
    public static func downloadFolder(environment: [String: String] = ProcessEnvironment.current) -> String {
        let home = Paths(environment: environment).home
        let fallback = home + "/Downloads"
        let file = Paths(environment: environment).configHome + "/user-dirs.dirs"
        guard let data = FileManager.default.contents(atPath: file),
              let answer = userDirectory("DOWNLOAD", in: String(decoding: data, as: UTF8.self), home: home),
              URL(fileURLWithPath: answer).standardizedFileURL.path != URL(fileURLWithPath: home).standardizedFileURL.path
        else { return fallback }
        return answer
    }

    /// The value of `XDG_<name>_DIR` in the text of a `user-dirs.dirs` file: `"$HOME/..."` or an
    /// absolute path in double quotes, with `\` escapes; the last assignment wins (the file is
    /// shell, sourced by xdg-user-dir). Nil when unset or not of that form.
    static func userDirectory(_ name: String, in text: String, home: String) -> String? {
        var result: String? = nil
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard !line.hasPrefix("#"), line.hasPrefix("XDG_\(name)_DIR=") else { continue }
            let value = line.dropFirst("XDG_\(name)_DIR=".count)
            guard value.hasPrefix("\"") else { continue }
            var path = ""
            var escaped = false, closed = false
            for character in value.dropFirst() {
                if escaped { path.append(character); escaped = false }
                else if character == "\\" { escaped = true }
                else if character == "\"" { closed = true; break }
                else { path.append(character) }
            }
            guard closed else { continue }
            if path == "$HOME" { path = home } else if path.hasPrefix("$HOME/") { path = home + path.dropFirst(5) }
            guard path.hasPrefix("/") else { continue }
            result = path
        }
        return result
    }
}

/// How the agent runs, from the `[agent]` table.
public struct AgentSettings: Sendable, Equatable {
    /// Desktop notifications for each quarantined item (when a desktop session is there).
    public var notifications: Bool
    /// A file must keep its size and mtime this long before it is analysed.
    public var settleMilliseconds: Int
    /// Where inotify cannot watch (the kernel's watch limit), folders are rescanned this often.
    public var rescanSeconds: Int
    /// Files are judged in a confined worker process (no privileges, no network, no writes);
    /// false runs the models inside the agent (a crash in a decoder then costs the agent).
    public var sandbox: Bool
    /// A file with neither a verdict nor progress for this long has hung its worker, which is
    /// replaced; the file is tried once more, alone, then handled by `on_error`.
    public var fileDeadlineSeconds: Int
    /// The analysis worker (which holds the models) ends after this long with no file to judge,
    /// and the next file starts it again; 0 keeps it for as long as the agent runs.
    public var workerIdleSeconds: Int
    /// Adult mode: a settled file is out of reach (moved aside) until its verdict, as child
    /// mode always does.
    public var holdWhileChecking: Bool
    /// Where a download came from, when it carries no `user.xdg.origin.url`: looked up,
    /// read-only, in the browsers' own download history (Chromium-family and Firefox profiles).
    public var browserHistory: Bool
    /// More browser profile folders to read (one holding `History` or `places.sqlite`).
    public var browserProfiles: [String]
    /// The page "Get help" opens in child mode (a local file or a URL); nil: the built-in page.
    public var helpPage: String?
    /// Applications may ask the agent about their media over the session bus (`AnalysisPolicy`
    /// `simple`); false makes it `disabled` in adult mode. Child mode ignores it (`descriptive`).
    public var appAnalysis = true

    public init(notifications: Bool = true, settleMilliseconds: Int = 100, rescanSeconds: Int = 60, sandbox: Bool = true,
                fileDeadlineSeconds: Int = 120, holdWhileChecking: Bool = false, browserHistory: Bool = true, browserProfiles: [String] = [],
                helpPage: String? = nil, workerIdleSeconds: Int = 60) {
        self.workerIdleSeconds = workerIdleSeconds
        self.browserHistory = browserHistory
        self.browserProfiles = browserProfiles
        self.helpPage = helpPage
        self.notifications = notifications
        self.settleMilliseconds = settleMilliseconds
        self.rescanSeconds = rescanSeconds
        self.sandbox = sandbox
        self.fileDeadlineSeconds = fileDeadlineSeconds
        self.holdWhileChecking = holdWhileChecking
    }
}

extension Settings {
    /// The browsers' download history this account's downloads are looked up in (what the agent
    /// reads and `doctor` names): the usual profiles under `configHome` (default: the
    /// environment's `XDG_CONFIG_HOME`) and home, and `agent.browser_profiles`.
    public func browserHistory(environment: [String: String] = ProcessEnvironment.current, configHome: String? = nil) -> BrowserHistory {
        BrowserHistory(home: Paths(environment: environment).home, configHome: configHome ?? Paths(environment: environment).configHome,
                       extraProfiles: agent.browserProfiles.map { WatchSettings.expand($0, environment: environment) })
    }
}
