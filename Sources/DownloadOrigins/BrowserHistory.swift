import Foundation

#if canImport(Glibc)
import Glibc
#endif
import QuarantineBase

/// Finds where a downloaded file came from in the browsers' own download history, read-only and
/// without disturbing a running browser.
///
/// Why: neither Chromium nor Firefox writes `user.xdg.origin.url` on Linux, yet `quarantine show`
/// names the site and `quarantine block --origin` blocks its host.
///
/// **Where it looks** (``profiles()``, found anew on each call):
/// - Chromium-family user-data folders under `configHome`: `chromium`, `google-chrome`,
///   `google-chrome-beta`, `google-chrome-unstable`, `BraveSoftware/Brave-Browser`,
///   `microsoft-edge`, `microsoft-edge-beta`, `microsoft-edge-dev`, `vivaldi`, `vivaldi-snapshot`,
///   `opera`; and under `home` the Flatpak and snap ones: `.var/app/org.chromium.Chromium/config/chromium`,
///   `.var/app/com.google.Chrome/config/google-chrome`,
///   `.var/app/com.brave.Browser/config/BraveSoftware/Brave-Browser`,
///   `.var/app/com.microsoft.Edge/config/microsoft-edge`, `snap/chromium/common/chromium`. In each,
///   every subfolder holding a `History` file (`Default`, `Profile 1`, ...), and the folder itself
///   when it holds one (Opera).
/// - Firefox profile folders: every subfolder holding `places.sqlite` (not only those listed in
///   `profiles.ini`) of `home/.mozilla/firefox`, `configHome/mozilla/firefox` (where Firefox 147
///   and later, ESR 153 included, create new profiles), `home/.var/app/org.mozilla.firefox/.mozilla/firefox`,
///   `home/.var/app/org.mozilla.firefox/config/mozilla/firefox`, `home/snap/firefox/common/.mozilla/firefox`
///   and `home/.librewolf`; plus the absolute `Path=` profiles that a `profiles.ini` there names.
/// - `extraProfiles` (from the configuration): a folder holding `History` or `places.sqlite`
///   directly, else its subfolders that do.
///
/// **Whose files it reads**: a database is read only when it, and its `-journal` and `-wal`, are
/// regular files (not symbolic links) owned by the owner of the downloaded file, or by the user
/// running the lookup when that is not root. So an agent never names an origin out of another
/// account's history, and a root service looking up a child's download reads only databases the
/// child owns, never root's own.
///
/// **How it reads**: never through SQLite on the browser's files (both browsers lock them while
/// they run); each database is copied with its side files, as bytes, into memory files (see
/// `DatabaseCopy`), and ``parser`` makes the answer from them, treating them as untrusted (see
/// ``HistoryImage`` and `HistoryReader`). A guardian service's parser is its sandboxed analysis
/// worker: the service itself parses no byte of the child's history.
/// Databases over ``maximumDatabaseSize`` are skipped; each query stops after ``queryTimeLimit``.
///
/// **When** (measured with the real browsers, scripts/desktop/probe-history.py): Firefox ESR 153
/// has the download in its `-wal` 0 to 0.07 s after the file gets its final name; Chromium 156
/// commits its history every 10 s, so a download appears 2.6 to 9.7 s after its final rename.
/// A lookup takes about 1.5 ms for a small Chromium `History` and 10 to 15 ms for a Firefox
/// `places.sqlite` of 5 MiB with a 2.4 MiB `-wal` (the copy costs most). Ask again (``origin(ofDownloadAt:waitingUpTo:checkingEvery:)`` does so cheaply,
/// rereading a database only when its files changed) for up to ``longestCommitDelay``.
public struct BrowserHistory: Sendable {
    /// The two database layouts understood.
    public enum Kind: String, Sendable, Codable, Hashable {
        /// `History`: tables `downloads` and `downloads_url_chains`.
        case chromium
        /// `places.sqlite`: `moz_annos` (`downloads/destinationFileURI`), `moz_places`, `moz_historyvisits`.
        case firefox
    }

    /// One browser profile with a history database.
    public struct Profile: Sendable, Hashable {
        /// "Chromium", "Google Chrome", "Firefox", ... ("Chromium-based browser" or
        /// "Firefox-based browser" for a configured folder).
        public var browser: String
        public var kind: Kind
        /// The profile folder.
        public var folder: String
        /// The history database in it: `History` or `places.sqlite`.
        public var database: String

        public init(browser: String, kind: Kind, folder: String, database: String) {
            self.browser = browser
            self.kind = kind
            self.folder = folder
            self.database = database
        }
    }

    /// Why a profile's database was not read.
    public enum SkipReason: Sendable, Equatable {
        /// Owned by a user other than the file's owner (or the user looking).
        case notOwned(uid: UInt32)
        /// Over ``maximumDatabaseSize``, with its side files.
        case tooLarge(bytes: Int64)
        /// The browser kept writing to it while it was copied: ask again.
        case busy
        /// Not a readable SQLite database of the expected layout (any SQLite error lands here).
        case unreadable(String)
    }

    /// What one lookup did.
    public struct Lookup: Sendable {
        /// The most recent matching record among all profiles read; nil when none knows the file.
        public var origin: DownloadOrigin?
        /// The profiles whose database was read.
        public var read: [Profile]
        /// The profiles left out, and why.
        public var skipped: [(profile: Profile, reason: SkipReason)]
        /// How long the lookup took.
        public var elapsed: Duration
    }

    /// The user's home folder.
    public var home: String
    /// `${XDG_CONFIG_HOME:-~/.config}` of that user.
    public var configHome: String
    /// Profile folders named in the configuration.
    public var extraProfiles: [String]
    /// Databases bigger than this (with their -journal and -wal) are not read: 256 MiB.
    public var maximumDatabaseSize: Int64 = 256 << 20
    /// Each query on a database is interrupted after this long.
    public var queryTimeLimit: Duration = .seconds(2)
    /// Who parses the copied bytes: this process by default; a guardian service's sandboxed
    /// analysis worker there.
    public var parser: HistoryParser = HistoryParsing.inProcess

    /// How long after a download's final rename its record may take to appear: Chromium commits
    /// its history every 10 s (measured: 2.6 to 9.7 s); Firefox within 0.2 s.
    public static let longestCommitDelay: Duration = .seconds(11)

    /// - Parameters:
    ///   - home: the user's home.
    ///   - configHome: `${XDG_CONFIG_HOME:-~/.config}` for that user.
    ///   - extraProfiles: profile folders named in the configuration.
    public init(home: String, configHome: String, extraProfiles: [String] = []) {
        self.home = home
        self.configHome = configHome
        self.extraProfiles = extraProfiles
    }

    /// The history of the user running this process: `$HOME` (else the password database's
    /// home) and `$XDG_CONFIG_HOME` when it is an absolute path (else `~/.config`).
    public static func forCurrentUser(extraProfiles: [String] = []) -> BrowserHistory {
        let paths = Paths(environment: ProcessInfo.processInfo.environment)
        return BrowserHistory(home: paths.home, configHome: paths.configHome, extraProfiles: extraProfiles)
    }

    /// The history of another account (a service looking up a child's download): its home from
    /// the password database and `~/.config` (its environment is not known). Nil for no such user.
    public static func forUser(uid: uid_t, extraProfiles: [String] = []) -> BrowserHistory? {
        guard let home = homeFolder(of: uid) else { return nil }
        return BrowserHistory(home: home, configHome: home + "/.config", extraProfiles: extraProfiles)
    }

    // MARK: - Looking up

    /// Where the file at `path` was downloaded from, according to the browsers' history now; nil
    /// when no browser knows it (yet: see ``longestCommitDelay``).
    public func origin(ofDownloadAt path: String) -> DownloadOrigin? {
        lookUp(downloadAt: path).origin
    }

    /// Looks now and then again whenever a history database changes on disk (checked every
    /// `interval` by `stat` alone), until a browser knows the file or `limit` has passed (or the
    /// task is cancelled). Use ``longestCommitDelay`` as the limit for a file just downloaded.
    public func origin(ofDownloadAt path: String, waitingUpTo limit: Duration,
                       checkingEvery interval: Duration = .milliseconds(250)) async -> DownloadOrigin? {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: limit)
        var seen: [Profile: [FileStamp?]] = [:]
        while true {
            let changed = profiles().filter { profile in
                let stamps = Self.stamps(of: profile)
                defer { seen[profile] = stamps }
                return seen[profile] != stamps
            }
            if !changed.isEmpty, let origin = lookUp(downloadAt: path, in: changed).origin { return origin }
            let now = clock.now
            guard now < deadline, !Task.isCancelled else { return nil }
            try? await Task.sleep(for: min(interval, now.duration(to: deadline)))
        }
    }

    /// One lookup in every profile, with what was read, what was skipped and the time it took.
    public func lookUp(downloadAt path: String) -> Lookup {
        lookUp(downloadAt: path, in: profiles())
    }

    func lookUp(downloadAt path: String, in profiles: [Profile]) -> Lookup {
        let clock = ContinuousClock()
        let start = clock.now
        let paths = Self.candidatePaths(path)
        let owners = Self.allowedOwners(forFileAt: path)
        var result = Lookup(origin: nil, read: [], skipped: [], elapsed: .zero)
        var best: DownloadOrigin?
        for profile in profiles {
            let copy: DatabaseCopy
            do {
                copy = try DatabaseCopy.make(of: profile.database, allowedOwners: owners, maximumSize: maximumDatabaseSize)
            } catch {
                switch error {
                case .missing: break
                case .notOwned(let uid): result.skipped.append((profile, .notOwned(uid: uid)))
                case .tooLarge(let bytes): result.skipped.append((profile, .tooLarge(bytes: bytes)))
                case .busy: result.skipped.append((profile, .busy))
                case .unreadable(let why): result.skipped.append((profile, .unreadable(why)))
                }
                continue
            }
            defer { copy.remove() }
            let match: HistoryMatch?
            do {
                match = try parser(HistoryQuery(kind: profile.kind, paths: paths, timeLimit: queryTimeLimit), copy.files)
            } catch {
                result.skipped.append((profile, .unreadable("\(error)")))
                continue
            }
            result.read.append(profile)
            guard let match, match.isPlausible else { continue }
            // The most recent record wins; with no time, the first profile's.
            if best == nil || (match.recordedAt ?? .distantPast) > (best?.downloadedAt ?? .distantPast) {
                best = DownloadOrigin(fileURL: match.fileURL, pageURL: match.pageURL, browser: profile.browser,
                                      profile: profile.folder, downloadedAt: match.recordedAt)
            }
        }
        result.origin = best
        result.elapsed = start.duration(to: clock.now)
        return result
    }

    /// The file's absolute path as given and with its folder's symbolic links resolved (the
    /// browser recorded one of them; the file itself may be gone by now).
    static func candidatePaths(_ path: String) -> [String] {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var paths = [absolute]
        let url = URL(fileURLWithPath: absolute)
        let folder = url.deletingLastPathComponent().path
        if let resolved = realpath(folder, nil) {
            let real = String(cString: resolved)
            free(resolved)
            let candidate = (real == "/" ? "" : real) + "/" + url.lastPathComponent
            if candidate != absolute { paths.append(candidate) }
        }
        return paths
    }

    /// The users whose databases may name this file's origin: its owner, and the user looking
    /// unless that is root (root's own databases only for a file root owns, or when it is gone).
    static func allowedOwners(forFileAt path: String) -> Set<uid_t> {
        var owners: Set<uid_t> = []
        var info = stat()
        if stat(path, &info) == 0 { owners.insert(info.st_uid) }
        let me = geteuid()
        if me != 0 || owners.isEmpty { owners.insert(me) }
        return owners
    }

    /// The stamps of a profile's database and side files: they change when the browser commits.
    static func stamps(of profile: Profile) -> [FileStamp?] {
        ([""] + DatabaseCopy.sideSuffixes).map { FileStamp(path: profile.database + $0) }
    }

    private static func homeFolder(of uid: uid_t) -> String? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let dir = entry.pw_dir else { return nil }
        let home = String(cString: dir)
        return home.hasPrefix("/") ? home : nil
    }
}
