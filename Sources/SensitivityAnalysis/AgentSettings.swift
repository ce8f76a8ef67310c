import Foundation
import TOMLKit

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

    public static let defaultExclusions = [".git", ".hg", ".svn", "node_modules", ".cache", ".Trash-1000"]

    public init(incoming: [String]? = nil, outgoing: [String] = [], exclude: [String] = WatchSettings.defaultExclusions) {
        self.incoming = incoming
        self.outgoing = outgoing
        self.exclude = exclude
    }

    /// One folder and the direction it is checked in.
    public struct Root: Sendable, Hashable, Codable {
        public var path: String
        public var direction: String   // "incoming" or "outgoing"
        public init(path: String, direction: String) {
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
            if seen.insert(absolute).inserted { result.append(Root(path: absolute, direction: "incoming")) }
        }
        if mode == .child {
            for path in outgoing {
                let absolute = Self.expand(path, environment: environment)
                if seen.insert(absolute).inserted { result.append(Root(path: absolute, direction: "outgoing")) }
            }
        }
        return result
    }

    /// `~` and `~/...` expanded, relative paths made absolute, trailing slashes and `.` removed.
    public static func expand(_ path: String, environment: [String: String] = ProcessEnvironment.current) -> String {
        var text = path
        if text == "~" { text = XDG.home(environment) }
        else if text.hasPrefix("~/") { text = XDG.home(environment) + text.dropFirst(1) }
        if !text.hasPrefix("/") { text = FileManager.default.currentDirectoryPath + "/" + text }
        return URL(fileURLWithPath: text).standardizedFileURL.path
    }

    /// The user's download folder: `xdg-user-dir DOWNLOAD`, unless that is missing or answers the
    /// home folder itself (its answer when nothing is configured); then `~/Downloads`.
    public static func downloadFolder(environment: [String: String] = ProcessEnvironment.current) -> String {
        let home = XDG.home(environment)
        let fallback = home + "/Downloads"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/xdg-user-dir")
        process.arguments = ["DOWNLOAD"]
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return fallback }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let answer = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationStatus == 0, answer.hasPrefix("/"),
              URL(fileURLWithPath: answer).standardizedFileURL.path != URL(fileURLWithPath: home).standardizedFileURL.path
        else { return fallback }
        return answer
    }

    mutating func apply(_ table: TOMLTable, fail: (String) -> Settings.ConfigurationError) throws(Settings.ConfigurationError) {
        func strings(_ key: String) throws(Settings.ConfigurationError) -> [String]? {
            guard let value = table[key] else { return nil }
            guard let array = value.array else { throw fail("watch.\(key) must be a list of folders, like [\"~/Downloads\"]") }
            var result: [String] = []
            for element in array {
                guard let text = element.string, !text.isEmpty else { throw fail("watch.\(key) must hold only non-empty strings") }
                result.append(text)
            }
            return result
        }
        if let list = try strings("incoming") { incoming = list }
        if let list = try strings("outgoing") { outgoing = list }
        if let list = try strings("exclude") { exclude = list }
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

    public init(notifications: Bool = true, settleMilliseconds: Int = 100, rescanSeconds: Int = 60) {
        self.notifications = notifications
        self.settleMilliseconds = settleMilliseconds
        self.rescanSeconds = rescanSeconds
    }

    mutating func apply(_ table: TOMLTable, fail: (String) -> Settings.ConfigurationError) throws(Settings.ConfigurationError) {
        if let value = table["notifications"] {
            guard let flag = value.bool else { throw fail("agent.notifications must be true or false") }
            notifications = flag
        }
        if let value = table["settle_ms"] {
            guard let n = value.int, (0...60_000).contains(n) else { throw fail("agent.settle_ms must be a whole number of milliseconds from 0 to 60000") }
            settleMilliseconds = n
        }
        if let value = table["rescan_seconds"] {
            guard let n = value.int, (5...86_400).contains(n) else { throw fail("agent.rescan_seconds must be a whole number of seconds from 5 to 86400") }
            rescanSeconds = n
        }
    }
}
