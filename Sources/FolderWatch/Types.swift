import Glibc

/// Whether files arriving in a watched folder are coming in (downloads, received files)
/// or going out (folders that are shared or synced away). The watcher itself treats both
/// the same; the consumer decides what to do with a candidate from each root.
public enum WatchDirection: String, Sendable, Codable, CaseIterable {
    case incoming
    case outgoing
}

/// A folder to watch, recursively.
public struct WatchRoot: Sendable, Hashable, Codable {
    /// Absolute path of the folder. It may be absent; it is armed when it appears.
    public var path: String
    /// What the consumer does with candidates under this root.
    public var direction: WatchDirection

    public init(path: String, direction: WatchDirection) {
        self.path = path
        self.direction = direction
    }
}

/// A regular, non-empty file whose size and modification time stayed unchanged over
/// `FolderWatchOptions.settleDelay`: ready to be examined.
///
/// The same file may be reported more than once (by an event and by a scan, or by several
/// scans); consumers deduplicate on `(device, inode, size, modificationNanoseconds, changeNanoseconds)`.
public struct Candidate: Sendable, Hashable {
    /// How the file was found.
    public enum Cause: String, Sendable {
        /// An inotify event (closed after writing, moved in, created as a link).
        case event
        /// A scan of a folder: the initial scan, a rescan, or the listing of a new folder.
        case scan
    }

    /// Absolute path of the file.
    public var path: String
    /// The `WatchRoot.path` the file is under (the deepest one when roots are nested).
    public var root: String
    /// `st_dev` of the file.
    public var device: UInt64
    /// `st_ino` of the file.
    public var inode: UInt64
    /// Size in bytes (always > 0).
    public var size: Int64
    /// `st_mtim` as nanoseconds since the epoch.
    public var modificationNanoseconds: Int64
    /// `st_ctim` as nanoseconds since the epoch (no program can set it back).
    public var changeNanoseconds: Int64
    /// How the file was found.
    public var cause: Cause

    public init(path: String, root: String, device: UInt64, inode: UInt64, size: Int64,
                modificationNanoseconds: Int64, changeNanoseconds: Int64 = 0, cause: Cause) {
        self.changeNanoseconds = changeNanoseconds
        self.path = path
        self.root = root
        self.device = device
        self.inode = inode
        self.size = size
        self.modificationNanoseconds = modificationNanoseconds
        self.cause = cause
    }
}

/// Why a root was scanned.
public enum ScanReason: String, Sendable {
    /// The initial scan from `FolderWatcher.start()`.
    case start
    /// The kernel event queue overflowed and events were lost.
    case overflow
    /// The fallback rescan of a root that could not be fully watched (watch limit).
    case periodic
    /// A root that was missing came back.
    case restored
    /// A root added by `FolderWatcher.setRoots(_:)`.
    case added
    /// A folder was moved into a watched tree from outside it.
    case directoryMovedIn
    /// `FolderWatcher.rescan()` was called.
    case requested
}

/// What a `FolderWatcher` reports on its `events` stream.
public enum FolderWatchEvent: Sendable {
    /// A file ready to be examined.
    case candidate(Candidate)
    /// A root is armed: `directories` folders under it (itself included) are watched.
    case rootWatched(root: String, directories: Int)
    /// A root is absent at start, or was deleted, moved away or unmounted. It is checked every
    /// `rootRetryInterval` and re-armed when it returns.
    case rootMissing(root: String, message: String)
    /// A missing root is back, armed and scanned (after its `.scanFinished(reason: .restored)`).
    case rootRestored(root: String)
    /// The kernel event queue overflowed (IN_Q_OVERFLOW): events were lost. A full rescan of all
    /// roots follows, ending with `.scanFinished(reason: .overflow)` for each root.
    case overflow
    /// The inotify watch limit was hit under this root: the root is rescanned every
    /// `fallbackRescanInterval` from now on. The message says how to raise the limit.
    case watchLimit(root: String, message: String)
    /// A scan of a root is done; `files` candidate files were found. Files that were still
    /// changing are reported when they settle, which may be after this event.
    case scanFinished(root: String, files: Int, reason: ScanReason)
    /// Something could not be watched or read (for example an unreadable folder). Never fatal:
    /// the rest of the tree is still watched.
    case problem(path: String, message: String)
}

/// Tuning for a `FolderWatcher`.
public struct FolderWatchOptions: Sendable {
    /// A file's size and modification time must stay unchanged over this long before it is reported.
    public var settleDelay: Duration = .milliseconds(100)
    /// Temporary-looking names (compared case-insensitively): a file whose name ends with one of
    /// these is reported once renamed to its final name, or, if no rename follows, once it was
    /// closed (or moved in) and then left unchanged for `temporaryQuietPeriod`.
    public var ignoredSuffixes: [String] = [".part", ".crdownload", ".download", ".partial"]
    /// How long a closed file with a temporary-looking name must stay unchanged before it is
    /// reported as it is (a download that was abandoned, or a name chosen to hide behind).
    public var temporaryQuietPeriod: Duration = .seconds(60)
    /// Absolute folders that are never watched nor scanned, with everything under them (e.g. the vault).
    public var excludedPaths: [String] = []
    /// Exact file or folder names that are skipped wherever they appear (e.g. ".git").
    public var excludedNames: [String] = []
    /// Folders never watched nor scanned, by identity (device, inode), whatever they are called
    /// or wherever they are moved (a service's own holding folder, which the watched account
    /// may rename but not make).
    public var excludedFolders: [(device: UInt64, inode: UInt64)] = []
    /// Folders never watched nor walked, by what `lstat` says of them: called for each folder
    /// found (path, owner, group, mode); true skips it and everything under it. The guardian
    /// service walks a shared `/tmp` only where the account it protects can write.
    public var skipFolder: (@Sendable (_ path: String, _ owner: UInt32, _ group: UInt32, _ mode: UInt32) -> Bool)? = nil
    /// How often a root that hit the watch limit is rescanned.
    public var fallbackRescanInterval: Duration = .seconds(60)
    /// How often a missing root is checked for.
    public var rootRetryInterval: Duration = .seconds(2)
    /// How long a file may keep changing before it is reported as it is; it is waited for
    /// again and reported once more when it settles. (A temporary-looking name is not reported at
    /// this deadline: it is waited for again on its next close.)
    public var settleGiveUp: Duration = .seconds(30)
    /// Whether a root may itself be a symbolic link (a person's `~/Downloads -> /data/dl`). The
    /// guardian service sets false: a root replaced by a link (to `/var/lib/quarantine`, to a
    /// folder the account cannot read) is then missing, never followed.
    public var followRootLinks = true
    /// Strict settling, for an account that may try to keep a file from ever settling (the
    /// guardian service): writes are followed as they happen (IN_MODIFY), so a file written
    /// through a descriptor kept open is noticed without its close; and a file with a
    /// temporary-looking name that is still changing at `settleGiveUp` is reported as it is
    /// (then again once it settles), never dropped.
    public var strictSettling = false

    public init() {}
}

/// An error from a `FolderWatcher`: which operation failed, on what, why (errno), and what to do.
public struct FolderWatchError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The errno value (e.g. `EMFILE`, `EBUSY`).
    public var code: Int32
    /// A message a user can act on.
    public var message: String
    /// The path involved, if any.
    public var path: String?
    /// The operation that failed, e.g. "inotify_init".
    public var operation: String

    public init(code: Int32, message: String, path: String? = nil, operation: String) {
        self.code = code
        self.message = message
        self.path = path
        self.operation = operation
    }

    public var description: String {
        var text = "\(operation) failed"
        if let path { text += " for \(path)" }
        text += ": \(message) (\(errnoName(code)))"
        return text
    }
}

/// "ENOSPC: No space left on device" style text for an errno value.
func errnoName(_ code: Int32) -> String {
    let names: [Int32: String] = [
        EPERM: "EPERM", ENOENT: "ENOENT", EACCES: "EACCES", EBUSY: "EBUSY", ENOTDIR: "ENOTDIR",
        EINVAL: "EINVAL", EMFILE: "EMFILE", ENFILE: "ENFILE", ENOSPC: "ENOSPC", ENOMEM: "ENOMEM",
        ENAMETOOLONG: "ENAMETOOLONG", ELOOP: "ELOOP", EIO: "EIO", ESTALE: "ESTALE",
    ]
    let text = String(cString: strerror(code))
    if let name = names[code] { return "\(name): \(text)" }
    return "errno \(code): \(text)"
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (high, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return high &+ attoseconds / 1_000_000_000
    }
}
