import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension BrowserHistory {
    /// A folder where a browser keeps its profiles.
    struct ProfileRoot: Sendable {
        enum Base: Sendable { case home, configHome }
        let browser: String
        let kind: Kind
        let base: Base
        let relativePath: String
    }

    /// Every place looked in, in this order (the list in ``BrowserHistory``'s documentation).
    static let profileRoots: [ProfileRoot] = {
        let chromiumInConfig: [(String, String)] = [
            ("Chromium", "chromium"),
            ("Google Chrome", "google-chrome"),
            ("Google Chrome Beta", "google-chrome-beta"),
            ("Google Chrome Dev", "google-chrome-unstable"),
            ("Brave", "BraveSoftware/Brave-Browser"),
            ("Microsoft Edge", "microsoft-edge"),
            ("Microsoft Edge Beta", "microsoft-edge-beta"),
            ("Microsoft Edge Dev", "microsoft-edge-dev"),
            ("Vivaldi", "vivaldi"),
            ("Vivaldi Snapshot", "vivaldi-snapshot"),
            ("Opera", "opera"),
        ]
        let chromiumInHome: [(String, String)] = [
            ("Chromium", ".var/app/org.chromium.Chromium/config/chromium"),
            ("Google Chrome", ".var/app/com.google.Chrome/config/google-chrome"),
            ("Brave", ".var/app/com.brave.Browser/config/BraveSoftware/Brave-Browser"),
            ("Microsoft Edge", ".var/app/com.microsoft.Edge/config/microsoft-edge"),
            ("Chromium", "snap/chromium/common/chromium"),
        ]
        let firefox: [(String, ProfileRoot.Base, String)] = [
            ("Firefox", .home, ".mozilla/firefox"),
            ("Firefox", .configHome, "mozilla/firefox"),
            ("Firefox", .home, ".var/app/org.mozilla.firefox/.mozilla/firefox"),
            ("Firefox", .home, ".var/app/org.mozilla.firefox/config/mozilla/firefox"),
            ("Firefox", .home, "snap/firefox/common/.mozilla/firefox"),
            ("LibreWolf", .home, ".librewolf"),
        ]
        return chromiumInConfig.map { ProfileRoot(browser: $0.0, kind: .chromium, base: .configHome, relativePath: $0.1) }
            + chromiumInHome.map { ProfileRoot(browser: $0.0, kind: .chromium, base: .home, relativePath: $0.1) }
            + firefox.map { ProfileRoot(browser: $0.0, kind: .firefox, base: $0.1, relativePath: $0.2) }
    }()

    /// The history database's file name for each kind.
    static func databaseName(_ kind: Kind) -> String {
        switch kind {
        case .chromium: "History"
        case .firefox: "places.sqlite"
        }
    }

    /// The profiles with a history database on disk now: the browsers' usual folders, then
    /// ``extraProfiles``. Each database once, even when reached by two ways (a symbolic link).
    public func profiles() -> [Profile] {
        var found: [Profile] = []
        var seen: Set<String> = []
        func add(_ profile: Profile) {
            let key = Self.resolved(profile.folder) + "/" + Self.databaseName(profile.kind)
            if seen.insert(key).inserted { found.append(profile) }
        }
        for root in Self.profileRoots {
            let folder = (root.base == .home ? home : configHome) + "/" + root.relativePath
            guard Self.isFolder(folder) else { continue }
            Self.profiles(in: folder, kind: root.kind, browser: root.browser, includingItself: true).forEach(add)
            if root.kind == .firefox {
                for absolute in Self.absoluteProfilePaths(inProfilesINI: folder + "/profiles.ini")
                where Self.holdsDatabase(absolute, .firefox) {
                    add(Profile(browser: root.browser, kind: .firefox, folder: absolute, database: absolute + "/places.sqlite"))
                }
            }
        }
        for extra in extraProfiles {
            let folder = extra.count > 1 && extra.hasSuffix("/") ? String(extra.dropLast()) : extra
            guard folder.hasPrefix("/"), Self.isFolder(folder) else { continue }
            let direct = [Kind.chromium, .firefox].filter { Self.holdsDatabase(folder, $0) }
            if direct.isEmpty {
                for kind in [Kind.chromium, .firefox] {
                    Self.profiles(in: folder, kind: kind, browser: Self.configuredName(kind), includingItself: false).forEach(add)
                }
            } else {
                for kind in direct {
                    add(Profile(browser: Self.configuredName(kind), kind: kind, folder: folder, database: folder + "/" + Self.databaseName(kind)))
                }
            }
        }
        return found
    }

    private static func configuredName(_ kind: Kind) -> String {
        switch kind {
        case .chromium: "Chromium-based browser"
        case .firefox: "Firefox-based browser"
        }
    }

    /// `folder` itself (when asked) and its subfolders, sorted by name, that hold the database.
    private static func profiles(in folder: String, kind: Kind, browser: String, includingItself: Bool) -> [Profile] {
        let name = databaseName(kind)
        var result: [Profile] = []
        if includingItself, holdsDatabase(folder, kind) {
            result.append(Profile(browser: browser, kind: kind, folder: folder, database: folder + "/" + name))
        }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        for entry in entries.sorted() {
            let sub = folder + "/" + entry
            if isFolder(sub), holdsDatabase(sub, kind) {
                result.append(Profile(browser: browser, kind: kind, folder: sub, database: sub + "/" + name))
            }
        }
        return result
    }

    /// Whether `folder` has an entry named like the database that is not a folder (a symbolic
    /// link or a FIFO counts: the lookup then says why it did not read it).
    private static func holdsDatabase(_ folder: String, _ kind: Kind) -> Bool {
        var info = stat()
        return lstat(folder + "/" + databaseName(kind), &info) == 0 && (info.st_mode & S_IFMT) != S_IFDIR
    }

    private static func isFolder(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    private static func resolved(_ path: String) -> String {
        guard let real = realpath(path, nil) else { return path }
        defer { free(real) }
        return String(cString: real)
    }

    /// The `Path=` of `profiles.ini` sections with `IsRelative=0` (profiles kept elsewhere);
    /// relative ones are subfolders, found anyway. A file over 1 MiB is not read.
    static func absoluteProfilePaths(inProfilesINI path: String) -> [String] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 1 << 20), let text = String(data: data, encoding: .utf8) else { return [] }
        var result: [String] = []
        var sectionPath: String?
        var relative = true
        func endSection() {
            if let sectionPath, !relative, sectionPath.hasPrefix("/") { result.append(sectionPath) }
            sectionPath = nil
            relative = true
        }
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") {
                endSection()
            } else if line.hasPrefix("Path=") {
                sectionPath = String(line.dropFirst(5))
            } else if line.hasPrefix("IsRelative=") {
                relative = line.dropFirst(11) != "0"
            }
        }
        endSection()
        return result
    }
}
