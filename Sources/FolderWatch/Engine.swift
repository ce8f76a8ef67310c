import CInotifyTools
import Glibc
import PathBytes

/// An inotify constant (imported as Int32 or UInt32) as an event mask.
func flag(_ value: some BinaryInteger) -> UInt32 { UInt32(truncatingIfNeeded: value) }

/// Events asked for on every watched folder.
/// IN_ATTRIB: a file or folder that could not be read is tried again once its mode changes.
private let folderMask: UInt32 = flag(IN_CREATE) | flag(IN_CLOSE_WRITE) | flag(IN_MOVED_FROM) | flag(IN_MOVED_TO) | flag(IN_ATTRIB)
    | flag(IN_DELETE_SELF) | flag(IN_MOVE_SELF) | flag(IN_ONLYDIR) | flag(IN_EXCL_UNLINK)
/// Sub-folders are never reached through a symbolic link; a root itself may be one.
private let subfolderMask: UInt32 = folderMask | flag(IN_DONT_FOLLOW)

/// How long a MOVED_FROM of a folder waits for its MOVED_TO before the folder counts as moved out.
private let moveMatchWindow: Duration = .milliseconds(50)

/// Everything that runs on the one inotify thread: libinotifytools (which keeps global state and
/// must only ever be called from this thread), the watch table, the roots and the scans.
///
/// The watch table is our own (wd <-> path), because libinotifytools does not return the watch
/// descriptor it adds and keeps stale names for watches the kernel removed (IN_IGNORED). The
/// library initialises inotify and reads and buffers events; watches are added and removed with
/// `inotify_add_watch`/`inotify_rm_watch` on its descriptor, which is found in /proc/self/fd.
final class Engine: @unchecked Sendable {
    private struct RootState {
        enum Status { case armed, missing }
        /// The root as given (reported in events).
        var root: WatchRoot
        var status: Status = .missing
        /// The watch on the root folder itself.
        var wd: Int32?
        /// The watch limit was hit under this root: it is rescanned every fallbackRescanInterval.
        var limited = false
        var nextFallback: ContinuousClock.Instant?
        var nextRetry: ContinuousClock.Instant?
        var missingReported = false
        /// The root is a mount point (its device is not its parent's), seen when it was armed.
        var isMountPoint = false
        /// It was a mount point and was unmounted: the folder now at its path is the one the
        /// filesystem covered, and mounting it again raises no inotify event. It counts as back
        /// only when something is mounted there again.
        var awaitingMount = false
    }

    private struct WalkResult {
        var directories = 0
        var files: [(path: String, status: FileStatus)] = []
        var visited: Set<Int32> = []
        var hitLimit = false
    }

    private let options: FolderWatchOptions
    private let control: Control
    private let settler: Settler
    private let emit: @Sendable (FolderWatchEvent) -> Void
    private let excludedPaths: [String]
    private let excludedNames: Set<String>
    /// ``FolderWatchOptions/excludedFolders`` as "device:inode".
    private let excludedFolders: Set<String>
    /// ``FolderWatchOptions/skipFolder``.
    private let skipFolder: (@Sendable (String, UInt32, UInt32, UInt32) -> Bool)?
    private let ignoredSuffixes: [String]

    private var roots: [String: RootState] = [:]        // by normalized path
    private var pathByWD: [Int32: String] = [:]
    private var wdByPath: [String: Int32] = [:]
    private var pendingMoves: [UInt32: (path: String, deadline: ContinuousClock.Instant)] = [:]
    private var descriptor: Int32 = -1
    private var mayHaveBufferedEvents = false
    private var overflowed = false
    /// Files the reader could not open (permission denied) and folders this thread could not
    /// watch or list: each is tried again when its attributes change (chmod, chown, ACLs).
    private var awaitingReadFiles: Set<String> = []
    private var awaitingReadFolders: Set<String> = []

    init(options: FolderWatchOptions, control: Control, settler: Settler,
         emit: @escaping @Sendable (FolderWatchEvent) -> Void) {
        self.options = options
        self.control = control
        self.settler = settler
        self.emit = emit
        excludedPaths = options.excludedPaths.map(normalizePath)
        excludedNames = Set(options.excludedNames)
        excludedFolders = Set(options.excludedFolders.map { "\($0.device):\($0.inode)" })
        skipFolder = options.skipFolder
        ignoredSuffixes = options.ignoredSuffixes.map { $0.lowercased() }
    }

    // MARK: - Thread body

    /// Initialises inotify, reports the outcome through `started`, then arms the roots and runs
    /// until a stop is requested. Returns after `inotifytools_cleanup()`.
    func run(roots initialRoots: [WatchRoot], started: (FolderWatchError?) -> Void) {
        let before = inotifyDescriptorsOfThisProcess()
        guard inotifytools_initialize() != 0 else {
            started(Self.initialisationError(code: inotifytools_error()))
            return
        }
        let added = inotifyDescriptorsOfThisProcess().subtracting(before)
        guard added.count == 1, let found = added.first else {
            inotifytools_cleanup()
            started(FolderWatchError(
                code: EBADF,
                message: "inotify was initialised but its descriptor could not be identified in /proc/self/fd "
                    + "(found \(added.count) new inotify descriptors). Is /proc mounted?",
                path: "/proc/self/fd", operation: "inotify_init"))
            return
        }
        descriptor = found
        started(nil)

        for root in initialRoots { addRoot(root, reason: .start) }
        loop()
        inotifytools_cleanup()
        descriptor = -1
    }

    static func initialisationError(code: Int32) -> FolderWatchError {
        let message: String
        switch code {
        case EMFILE:
            let limit = readIntegerFile("/proc/sys/fs/inotify/max_user_instances").map(String.init) ?? "unknown"
            message = "Too many inotify instances for this user (fs.inotify.max_user_instances = \(limit)). "
                + "Close other programs that watch files, or raise the limit: "
                + "sudo sysctl fs.inotify.max_user_instances=1024 (persistent in /etc/sysctl.d/)."
        case ENFILE:
            message = "The system-wide limit on open files is reached; close some programs and try again."
        case ENOMEM:
            message = "Not enough kernel memory to create an inotify instance."
        default:
            message = "Cannot initialise inotify."
        }
        return FolderWatchError(code: code, message: message, operation: "inotify_init")
    }

    private func loop() {
        var descriptors = [
            pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
            control.wakePipe.pollDescriptor,
        ]
        while !control.isStopping {
            for command in control.takeCommands() {
                if control.isStopping { return }
                perform(command)
            }
            if control.isStopping { return }

            let timeout = mayHaveBufferedEvents ? 0 : pollTimeoutMilliseconds()
            descriptors[0].revents = 0
            descriptors[1].revents = 0
            let ready = poll(&descriptors, 2, timeout)
            if ready < 0 {
                let code = errno
                if code == EINTR { continue }
                emit(.problem(path: "inotify", message: "poll() failed: \(errnoName(code)); the watcher stops."))
                return
            }
            if descriptors[1].revents != 0 { control.drainWake() }
            if control.isStopping { return }
            if descriptors[0].revents != 0 || mayHaveBufferedEvents { drainEvents() }
            if overflowed { recoverFromOverflow() }
            runDueTimers()
        }
    }

    /// Milliseconds until the next root retry, fallback rescan or unmatched move; -1 (forever)
    /// when there is none, so that an idle watcher uses no CPU.
    private func pollTimeoutMilliseconds() -> Int32 {
        var next: ContinuousClock.Instant?
        func consider(_ instant: ContinuousClock.Instant?) {
            guard let instant else { return }
            if next.map({ instant < $0 }) ?? true { next = instant }
        }
        for state in roots.values {
            if state.status == .missing { consider(state.nextRetry) }
            if state.status == .armed && state.limited { consider(state.nextFallback) }
        }
        for move in pendingMoves.values { consider(move.deadline) }
        return pollTimeout(until: next)
    }

    /// Reads what libinotifytools has (buffered or readable) without blocking. Bounded, so that
    /// commands and stop() are seen during a flood; `mayHaveBufferedEvents` brings us back.
    private func drainEvents() {
        mayHaveBufferedEvents = false
        for _ in 0..<2048 {
            // timeout 0: select() with a zero timeout, i.e. never blocks.
            guard let event = inotifytools_next_events(0, 1) else { return }
            let name = PathBytes.string(cString: qit_event_name(event))
            handle(wd: event.pointee.wd, mask: event.pointee.mask, cookie: event.pointee.cookie, name: name)
            if control.isStopping { return }
        }
        mayHaveBufferedEvents = true
    }

    private func perform(_ command: Command) {
        switch command {
        case .rescan:
            for key in roots.keys.sorted() {
                guard let state = roots[key] else { continue }
                if state.status == .armed {
                    rescanRoot(key, reason: .requested)
                } else {
                    retryMissingRoot(key)
                }
            }
        case .retryWhenReadable(let path):
            // Readable already (the mode changed before this request came): at once.
            awaitingReadFiles.insert(path)
            retryIfReadable(path)
        case .setRoots(let newRoots):
            var wanted: [String: WatchRoot] = [:]
            for root in newRoots { wanted[normalizePath(root.path)] = wanted[normalizePath(root.path)] ?? root }
            for key in roots.keys.sorted() where wanted[key] == nil {
                removeRoot(key)
            }
            for root in newRoots {
                let key = normalizePath(root.path)
                if roots[key] != nil {
                    roots[key]?.root.direction = root.direction
                } else {
                    addRoot(root, reason: .added)
                }
            }
        }
    }

    /// Whether the kernel holds no unread event for us (a zero-timeout poll).
    private func inotifyQueueIsEmpty() -> Bool {
        var descriptor = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 0
    }

    private func runDueTimers() {
        let now = ContinuousClock.now
        // A MOVED_FROM counts as "moved out" only once its window has passed AND every queued event
        // has been read: on a loaded machine this thread can be descheduled for longer than the
        // window while the matching MOVED_TO waits in the queue.
        if !pendingMoves.isEmpty, !mayHaveBufferedEvents, inotifyQueueIsEmpty() {
            for (cookie, move) in pendingMoves where move.deadline <= now {
                pendingMoves[cookie] = nil
                // No MOVED_TO came: the folder left the watched trees.
                unwatchTree(move.path)
            }
        }
        for key in roots.keys.sorted() {
            guard let state = roots[key] else { continue }
            if state.status == .missing, let retry = state.nextRetry, retry <= now {
                retryMissingRoot(key)
            } else if state.status == .armed, state.limited, let due = state.nextFallback, due <= now {
                rescanRoot(key, reason: .periodic)
            }
        }
    }

    // MARK: - Roots

    private func addRoot(_ root: WatchRoot, reason: ScanReason) {
        let key = normalizePath(root.path)
        if roots[key] != nil {
            roots[key]?.root.direction = root.direction
            return
        }
        roots[key] = RootState(root: root)
        if !armRoot(key, reason: reason) {
            markMissing(key, message: missingMessage(key))
        }
    }

    private func removeRoot(_ key: String) {
        guard roots.removeValue(forKey: key) != nil else { return }
        unwatchTree(key, keepCovered: true)
    }

    /// Watches and scans a root that exists; false when it is absent (or not a folder).
    @discardableResult
    private func armRoot(_ key: String, reason: ScanReason) -> Bool {
        guard let state = roots[key] else { return false }
        guard case .success(let status) = rootStatus(key), status.isDirectory else { return false }
        let mountPoint = Self.isMountPoint(key, device: status.device)
        if state.awaitingMount && !mountPoint { return false }
        roots[key]?.isMountPoint = mountPoint
        roots[key]?.awaitingMount = false
        roots[key]?.status = .armed
        roots[key]?.nextRetry = nil
        roots[key]?.missingReported = false
        let result = walk(from: key, rootKey: key)
        emit(.rootWatched(root: state.root.path, directories: result.directories))
        report(result.files, rootKey: key)
        emit(.scanFinished(root: state.root.path, files: result.files.count, reason: reason))
        return true
    }

    /// A root's status: through a symbolic link only where ``FolderWatchOptions/followRootLinks``.
    /// Without it, a root reached through a link in any of its parent folders counts as absent
    /// too (the kernel follows those on every call by path).
    private func rootStatus(_ key: String) -> Result<FileStatus, Errno> {
        if options.followRootLinks { return FileStatus.status(key) }
        guard let resolved = realpath(PathBytes.cString(key), nil) else { return .failure(Errno(errno)) }
        defer { free(resolved) }
        guard PathBytes.string(cString: resolved) == key else { return .failure(Errno(ELOOP)) }
        return FileStatus.lstatus(key)
    }

    /// Whether `path` is a mount point: its device differs from its parent folder's.
    private static func isMountPoint(_ path: String, device: UInt64) -> Bool {
        guard path != "/", case .success(let parent) = FileStatus.status(path + "/..") else { return false }
        return parent.device != device
    }

    private func missingMessage(_ key: String) -> String {
        let interval = describe(options.rootRetryInterval)
        if roots[key]?.awaitingMount == true {
            return "\(key) was unmounted. It is checked every \(interval) and watched again once it is mounted."
        }
        switch FileStatus.status(key) {
        case .failure(let error):
            return "Folder \(key) cannot be watched: \(error.text). It is checked for every \(interval) "
                + "and watched as soon as it exists."
        case .success:
            return "\(key) is not a folder. It is checked every \(interval) and watched once it is a folder."
        }
    }

    private func markMissing(_ key: String, message: String) {
        guard var state = roots[key] else { return }
        state.status = .missing
        state.wd = nil
        state.limited = false
        state.nextFallback = nil
        state.nextRetry = ContinuousClock.now + options.rootRetryInterval
        let report = !state.missingReported
        state.missingReported = true
        roots[key] = state
        if report { emit(.rootMissing(root: state.root.path, message: message)) }
    }

    private func retryMissingRoot(_ key: String) {
        guard let state = roots[key], state.status == .missing else { return }
        if armRoot(key, reason: .restored) {
            emit(.rootRestored(root: state.root.path))
        } else {
            roots[key]?.nextRetry = ContinuousClock.now + options.rootRetryInterval
        }
    }

    /// The root folder itself went away (deleted, moved, unmounted).
    private func rootGone(_ key: String, why: String) {
        guard let state = roots[key], state.status == .armed else { return }
        roots[key]?.wd = nil
        unwatchTree(key)
        let interval = describe(options.rootRetryInterval)
        markMissing(key, message: "Folder \(state.root.path) \(why). It is checked for every \(interval) "
            + "and watched again when it is back.")
    }

    private func rescanRoot(_ key: String, reason: ScanReason) {
        guard let state = roots[key], state.status == .armed else { return }
        guard case .success(let status) = rootStatus(key), status.isDirectory else {
            rootGone(key, why: "is no longer there")
            return
        }
        let result = walk(from: key, rootKey: key)
        // Forget watches the rescan did not meet (lost IN_IGNORED or renames during an overflow).
        for (wd, path) in pathByWD where !result.visited.contains(wd) && deepestRootKey(for: path) == key {
            inotify_rm_watch(descriptor, wd)
            forget(wd)
        }
        if reason == .periodic || state.limited {
            if result.hitLimit {
                roots[key]?.nextFallback = ContinuousClock.now + options.fallbackRescanInterval
            } else {
                // Every folder is watched again (the limit was raised or folders went away).
                roots[key]?.limited = false
                roots[key]?.nextFallback = nil
            }
        }
        report(result.files, rootKey: key)
        emit(.scanFinished(root: state.root.path, files: result.files.count, reason: reason))
    }

    private func recoverFromOverflow() {
        overflowed = false
        pendingMoves.removeAll()
        emit(.overflow)
        for key in roots.keys.sorted() where roots[key]?.status == .armed {
            rescanRoot(key, reason: .overflow)
        }
    }

    /// The deepest armed root containing `path`.
    private func deepestRootKey(for path: String) -> String? {
        var best: String?
        for (key, state) in roots where state.status == .armed && isPath(path, inside: key) {
            if best.map({ key.count > $0.count }) ?? true { best = key }
        }
        return best
    }

    private func isExcluded(path: String, name: String) -> Bool {
        if excludedNames.contains(name) { return true }
        if excludedPaths.contains(where: { isPath(path, inside: $0) }) { return true }
        guard !excludedFolders.isEmpty || skipFolder != nil, case .success(let status) = FileStatus.lstatus(path), status.isDirectory else { return false }
        if excludedFolders.contains("\(status.device):\(status.inode)") { return true }
        return skipFolder?(path, status.owner, status.group, status.mode) ?? false
    }

    private func isIgnoredFileName(_ name: String) -> Bool {
        guard !ignoredSuffixes.isEmpty else { return false }
        let lowered = name.lowercased()
        return ignoredSuffixes.contains { lowered.hasSuffix($0) }
    }

    // MARK: - Watches

    private enum WatchOutcome { case watched(Int32), gone, limit, failed(Errno) }

    private func addWatch(_ path: String, isRoot: Bool) -> WatchOutcome {
        let mask = (isRoot && options.followRootLinks ? folderMask : subfolderMask) | (options.strictSettling ? flag(IN_MODIFY) : 0)
        // A folder deeper than PATH_MAX is watched through /proc/self/fd/N of a descriptor of it
        // (opened without following links, one component at a time): that magic link must be
        // followed, so IN_DONT_FOLLOW is dropped for it.
        let wd = LongPaths.fits(path) ? inotify_add_watch(descriptor, PathBytes.cString(path), mask)
            : LongPaths.withShortPath(path) { inotify_add_watch(descriptor, $0, mask & ~flag(IN_DONT_FOLLOW)) }
        if wd < 0 {
            let code = errno
            switch code {
            case ENOSPC: return .limit
            case ENOENT, ENOTDIR: return .gone
            default: return .failed(Errno(code))
            }
        }
        if let previous = pathByWD[wd], previous != path, wdByPath[previous] == wd {
            // The same folder under a new name (a rename we did not see).
            wdByPath[previous] = nil
        }
        if let stale = wdByPath[path], stale != wd { pathByWD[stale] = nil }
        pathByWD[wd] = path
        wdByPath[path] = wd
        updateCount()
        return .watched(wd)
    }

    private func forget(_ wd: Int32) {
        guard let path = pathByWD.removeValue(forKey: wd) else { return }
        if wdByPath[path] == wd { wdByPath[path] = nil }
        updateCount()
    }

    /// Stops watching `path` and everything under it. With `keepCovered`, folders that are still
    /// under another armed root stay watched (a root removed from the configuration); without it,
    /// the folder left its place (moved out, root deleted) and all its watches go.
    private func unwatchTree(_ path: String, keepCovered: Bool = false) {
        for (wd, watched) in pathByWD where isPath(watched, inside: path) {
            if keepCovered && deepestRootKey(for: watched) != nil { continue }
            inotify_rm_watch(descriptor, wd)
            forget(wd)
        }
    }

    private func updateCount() {
        control.watchedDirectories.store(pathByWD.count, ordering: .releasing)
    }

    // MARK: - Walking

    /// Watches `start` and every folder under it (each one watched BEFORE it is listed, so that
    /// nothing created meanwhile is missed) and collects the files worth reporting.
    private func walk(from start: String, rootKey: String) -> WalkResult {
        var result = WalkResult()
        var stack = [start]
        var seen: Set<[UInt64]> = []
        while let folder = stack.popLast() {
            if control.isStopping { break }
            let isRoot = folder == rootKey
            let status: FileStatus
            switch isRoot ? rootStatus(folder) : FileStatus.lstatus(folder) {
            case .success(let found):
                guard found.isDirectory else { continue }
                status = found
            case .failure(let error):
                if error.code != ENOENT && error.code != ENOTDIR {
                    emit(.problem(path: folder, message: folderProblem(folder, error: error, action: "read")))
                }
                continue
            }
            // Bind mounts can make a folder appear twice (or inside itself).
            guard seen.insert([status.device, status.inode]).inserted else { continue }

            if result.hitLimit {
                // No new watch can be added in this walk; folders watched before stay watched.
                if let wd = wdByPath[folder] {
                    result.directories += 1
                    result.visited.insert(wd)
                }
            } else {
                switch addWatch(folder, isRoot: isRoot) {
                case .watched(let wd):
                    result.directories += 1
                    result.visited.insert(wd)
                    if isRoot { roots[rootKey]?.wd = wd }
                case .gone:
                    continue
                case .limit:
                    result.hitLimit = true
                    enterFallbackMode(rootKey, folder: folder)
                case .failed(let error):
                    emit(.problem(path: folder, message: folderProblem(folder, error: error, action: "watch")))
                    if error.code == EACCES || error.code == EPERM { awaitingReadFolders.insert(folder) }
                    continue
                }
            }

            let entries: [DirectoryEntry]
            switch listDirectory(folder) {
            case .success(let list): entries = list
            case .failure(let error):
                if error.code != ENOENT && error.code != ENOTDIR {
                    emit(.problem(path: folder, message: folderProblem(folder, error: error, action: "read")))
                    if error.code == EACCES || error.code == EPERM { awaitingReadFolders.insert(folder) }
                }
                continue
            }
            awaitingReadFolders.remove(folder)
            for entry in entries {
                let path = joinPath(folder, entry.name)
                if isExcluded(path: path, name: entry.name) { continue }
                switch entry.kind {
                case .directory:
                    stack.append(path)
                case .symbolicLink, .other:
                    continue
                case .regular, .unknown:
                    guard case .success(let fileStatus) = FileStatus.lstatus(path) else { continue }
                    if fileStatus.isDirectory {
                        stack.append(path)
                    } else if fileStatus.isRegularFile, fileStatus.size > 0 {
                        result.files.append((path, fileStatus))
                    }
                }
            }
        }
        return result
    }

    private func enterFallbackMode(_ key: String, folder: String) {
        guard let state = roots[key], !state.limited else { return }
        roots[key]?.limited = true
        roots[key]?.nextFallback = ContinuousClock.now + options.fallbackRescanInterval
        let limit = inotifytools_get_max_user_watches()
        let limitText = limit > 0 ? String(limit) : (readIntegerFile("/proc/sys/fs/inotify/max_user_watches").map(String.init) ?? "unknown")
        let message = "Cannot watch every folder under \(state.root.path) (first failure: \(folder)): "
            + "the inotify watch limit is reached (fs.inotify.max_user_watches = \(limitText), shared by all "
            + "programs of this user). New files under \(state.root.path) are now found by a rescan every "
            + "\(describe(options.fallbackRescanInterval)) instead of at once. To fix it, raise the limit: "
            + "sudo sysctl fs.inotify.max_user_watches=524288, and make it persistent with "
            + "echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/90-inotify-watches.conf"
        emit(.watchLimit(root: state.root.path, message: message))
    }

    private func folderProblem(_ folder: String, error: Errno, action: String) -> String {
        switch error.code {
        case EACCES, EPERM:
            return "Cannot \(action) folder \(folder): \(error.text). Files in it are not checked; "
                + "give this program read access to it (chmod/chown) or exclude it."
        case ENAMETOOLONG:
            return "Cannot \(action) folder \(folder): \(error.text). Its path is too long for the system; "
                + "files in it are not checked. Move it to a shorter path."
        default:
            return "Cannot \(action) folder \(folder): \(error.text). Files in it are not checked."
        }
    }

    /// Hands found files over: old enough ones at once, recently changed ones through the settler.
    private func report(_ files: [(path: String, status: FileStatus)], rootKey: String) {
        guard let root = roots[rootKey]?.root.path else { return }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let nowNanoseconds = Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
        for (path, status) in files {
            let reportedRoot = deepestRootKey(for: path).flatMap { roots[$0]?.root.path } ?? root
            // A temporary-looking name counts once it has been left alone for the quiet period.
            let temporary = isIgnoredFileName(String(path[path.index(after: path.lastIndex(of: "/") ?? path.startIndex)...]))
            let settle = (temporary ? options.temporaryQuietPeriod : options.settleDelay).nanoseconds
            if nowNanoseconds - status.modificationNanoseconds >= settle {
                emit(.candidate(Candidate(path: path, root: reportedRoot, device: status.device, inode: status.inode,
                                          size: status.size, modificationNanoseconds: status.modificationNanoseconds, changeNanoseconds: status.changeNanoseconds,
                                          cause: .scan)))
            } else {
                settler.submit(path: path, root: reportedRoot, cause: .scan, status: status,
                               quietPeriod: temporary ? options.temporaryQuietPeriod : nil)
            }
        }
    }

    // MARK: - Events

    private func handle(wd: Int32, mask: UInt32, cookie: UInt32, name: String) {
        if mask & flag(IN_Q_OVERFLOW) != 0 {
            overflowed = true
            return
        }
        let selfEvents = flag(IN_DELETE_SELF) | flag(IN_MOVE_SELF) | flag(IN_UNMOUNT) | flag(IN_IGNORED)
        if mask & selfEvents != 0 && name.isEmpty {
            if let key = roots.first(where: { $0.value.status == .armed && $0.value.wd == wd })?.key {
                let why: String
                if mask & flag(IN_UNMOUNT) != 0 {
                    why = "was unmounted"
                    if roots[key]?.isMountPoint == true { roots[key]?.awaitingMount = true }
                } else if mask & flag(IN_MOVE_SELF) != 0 {
                    why = "was moved or renamed"
                } else if mask & flag(IN_DELETE_SELF) != 0 {
                    why = "was deleted"
                } else {
                    why = "can no longer be watched (deleted or unmounted)"
                }
                rootGone(key, why: why)
            }
            if mask & flag(IN_IGNORED) != 0 { forget(wd) }
            return
        }
        guard !name.isEmpty, let folder = pathByWD[wd] else { return }
        let path = joinPath(folder, name)
        let isDirectory = mask & flag(IN_ISDIR) != 0

        if isExcluded(path: path, name: name) {
            if isDirectory, mask & flag(IN_MOVED_TO) != 0, let from = pendingMoves.removeValue(forKey: cookie) {
                unwatchTree(from.path)
            }
            return
        }
        guard let rootKey = deepestRootKey(for: path), let root = roots[rootKey]?.root.path else { return }

        if mask & flag(IN_ATTRIB) != 0 {
            if isDirectory, awaitingReadFolders.contains(path) {
                // Walking it again clears it once it can be listed.
                scanNewFolder(path, rootKey: rootKey, reason: .directoryMovedIn)
            } else if isDirectory, wdByPath[path] == nil, roots[rootKey]?.limited != true {
                // A folder skipped when it appeared (``FolderWatchOptions/skipFolder``: closed
                // to the account then) that a chmod or chown has opened: watched from now on,
                // with what it holds already. (Past the watch limit, the fallback rescan finds it.)
                scanNewFolder(path, rootKey: rootKey, reason: nil)
            } else if !isDirectory, awaitingReadFiles.contains(path) {
                retryIfReadable(path)
            }
            return
        }
        if isDirectory {
            if mask & flag(IN_CREATE) != 0 {
                scanNewFolder(path, rootKey: rootKey, reason: nil)
            } else if mask & flag(IN_MOVED_FROM) != 0 {
                pendingMoves[cookie] = (path, ContinuousClock.now + moveMatchWindow)
            } else if mask & flag(IN_MOVED_TO) != 0 {
                if let from = pendingMoves.removeValue(forKey: cookie), wdByPath[from.path] != nil {
                    renameTree(from: from.path, to: path)
                } else {
                    scanNewFolder(path, rootKey: rootKey, reason: .directoryMovedIn)
                }
            }
            return
        }
        if mask & (flag(IN_CLOSE_WRITE) | flag(IN_MOVED_TO) | flag(IN_CREATE) | flag(IN_MODIFY)) != 0 {
            if isIgnoredFileName(name) {
                // Reported after its rename; or, closed (or moved in) and then left alone for the
                // quiet period, as it is. While a download writes to it nothing is submitted
                // (with strict settling, its writes are followed too).
                guard mask & (flag(IN_CLOSE_WRITE) | flag(IN_MOVED_TO)) != 0 || options.strictSettling else { return }
                settler.submit(path: path, root: root, cause: .event, quietPeriod: options.temporaryQuietPeriod)
                return
            }
            settler.submit(path: path, root: root, cause: .event)
        }
    }

    /// A file the reader could not open: once it can be read (or is gone), it is no longer
    /// awaited; if readable it is reported again as a new event.
    private func retryIfReadable(_ path: String) {
        guard case .success(let status) = FileStatus.lstatus(path), status.isRegularFile else {
            awaitingReadFiles.remove(path)
            return
        }
        guard access(PathBytes.cString(path), R_OK) == 0 else { return }
        awaitingReadFiles.remove(path)
        guard let rootKey = deepestRootKey(for: path), let root = roots[rootKey]?.root.path else { return }
        settler.submit(path: path, root: root, cause: .event)
    }

    /// A folder appeared (created or moved in): watch it and everything under it, then report
    /// what it already holds.
    private func scanNewFolder(_ path: String, rootKey: String, reason: ScanReason?) {
        let result = walk(from: path, rootKey: rootKey)
        report(result.files, rootKey: rootKey)
        if let reason, let root = roots[rootKey]?.root.path {
            emit(.scanFinished(root: root, files: result.files.count, reason: reason))
        }
    }

    /// A watched folder was renamed (MOVED_FROM + MOVED_TO with the same cookie): its watches
    /// stay, only their paths change.
    private func renameTree(from old: String, to new: String) {
        let moved = pathByWD.filter { isPath($0.value, inside: old) }
        for (_, path) in moved where wdByPath[path] != nil {
            wdByPath[path] = nil
        }
        for (wd, path) in moved {
            let newPath = new + path.dropFirst(old.count)
            pathByWD[wd] = newPath
            wdByPath[newPath] = wd
        }
        settler.renamePrefix(from: old, to: new) { [self] path in
            deepestRootKey(for: path).flatMap { roots[$0]?.root.path }
        }
    }
}

/// "2 s", "500 ms".
func describe(_ duration: Duration) -> String {
    let nanoseconds = duration.nanoseconds
    if nanoseconds % 1_000_000_000 == 0 { return "\(nanoseconds / 1_000_000_000) s" }
    return "\(nanoseconds / 1_000_000) ms"
}
