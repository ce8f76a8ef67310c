import FolderWatch
import Foundation
import QuarantineCore
import QuarantineStore

extension AccountPipeline {
    // MARK: - Removable media and shared folders

    /// Tells the holding which watched folders other accounts write in (only the account's own
    /// files are held there) and which may be unmounted (never kept open); then, where media are
    /// watched for a protected account, reads the mount table and follows its changes.
    func startWatchingMounts() {
        let followed = !options.removableMediaFolders.isEmpty || options.runtimeFolder != nil
        let table = MountTable.current()
        if options.protectedHome != nil, followed, let table {
            let points = accountMounts(table)
            state.withLock { $0.mediaRoots = points }
            for point in points { logger.notice("\(mountedWhat(point)) at \(shown(point)): watched for the account's own files") }
        }
        holding.setSharedRoots(accountOnlyRoots(), removable: Set(state.withLock { $0.mediaRoots }))
        guard options.protectedHome != nil, followed else { return }
        do {
            let watcher = try MountWatcher(initial: table) { [weak self] table in self?.mountsChanged(table) }
            watcher.start()
            state.withLock { $0.mountWatcher = watcher }
        } catch {
            logger.error("removable media mounted from now on are not noticed (no wake-up pipe: \(error)); they are watched after a restart")
        }
    }

    /// The mount table changed: media mounted below ``Options/removableMediaFolders`` become
    /// watched folders (scanned at once, so what the medium brought is checked too), media
    /// unmounted stop being watched. Runs on the mount watcher's thread.
    func mountsChanged(_ table: MountTable) {
        rootsTurn.withLock { _ in applyMounts(table) }
    }

    /// ``mountsChanged(_:)``'s work, in the roots' turn (``rootsTurn``).
    private func applyMounts(_ table: MountTable) {
        let points = accountMounts(table)
        let (old, settings, watcher) = state.withLock { s -> ([String], Settings, FolderWatcher?) in
            defer { s.mediaRoots = points }
            return (s.mediaRoots, s.settings, s.watcher)
        }
        guard old != points else { return }
        holding.setSharedRoots(accountOnlyRoots(), removable: Set(points))
        for point in points where !old.contains(point) {
            logger.notice("\(mountedWhat(point)) mounted at \(shown(point)): watched for the account's own files\(settings.mode == .child ? "" : " once in child mode")")
        }
        for point in old where !points.contains(point) {
            logger.notice("\(mountedWhat(point)) unmounted from \(shown(point)): no longer watched; files held from it stay held until they are judged")
        }
        _ = applyRoots(settings, to: watcher)
        publishSoon()
    }

    /// The mount points watched for the account's own files in `table`: media mounted below
    /// ``Options/removableMediaFolders``, and the account's runtime folder when it is a mount
    /// point (logind mounted it: the account is logged in).
    func accountMounts(_ table: MountTable) -> [String] {
        var points = table.mountPoints(below: options.removableMediaFolders)
        if let runtime = options.runtimeFolder?.reachedAt, table.isMountPoint(runtime), !points.contains(runtime) { points.append(runtime) }
        return points
    }

    /// What is mounted at `point`, in words for the log.
    func mountedWhat(_ point: String) -> String {
        point == options.runtimeFolder?.reachedAt ? "the account's runtime folder (XDG_RUNTIME_DIR)" : "removable medium"
    }
}
