import Foundation
import Locking
import QuarantineBase
import QuarantineCore
import ServiceSupport

/// A notification's Show preview: the person's review page at that item, started when none runs.
///
/// The page is `quarantine review --item ID` of this same program (its path from
/// `/proc/self/exe`), started as the desktop's own program by
/// ``DetachedProgram/desktopCommand(_:_:environment:discardingOutput:)``: under systemd a
/// transient unit of its own (`systemd-run --user`), so that it is not held by the agent
/// unit's sandbox (`RestrictAddressFamilies=AF_UNIX` forbids its loopback socket) and outlives
/// the agent; without systemd a child in a session of its own. It serves itself and opens its
/// own address in the browser through a 0600 file: the secret goes on no command line (other
/// accounts read `/proc/PID/cmdline`), and its standard output, where it prints the address,
/// goes nowhere (not into the agent's log or the journal).
///
/// It runs as this agent's user with this agent's environment: it has that person's rights and
/// no more (a protected account's page goes through its guardian service, as when the account
/// types `quarantine review`). The guardian service never starts one (see the agent).
struct ReviewPageLauncher {
    /// What became of the request.
    enum Outcome: Equatable {
        /// A page runs already: open this 0600 launcher file (the page's address at the item).
        case running(launcher: String)
        /// A page was started at the item; it opens the browser itself.
        case started(pid: Int32)
        /// No page: why (the caller opens the blurred preview copy instead).
        case failed(String)
    }

    /// The agent's environment (where the page's folder is, the desktop session).
    var environment: [String: String]
    /// This program's path (the kernel's: `/proc/self/exe`).
    var executable: String? = Self.ownExecutable()
    /// How long a started page has to write its address before it counts as failed.
    var deadline: Duration = .seconds(10)

    /// Variables of the agent's service that are not the page's (it is no part of the unit).
    static let serviceVariables: Set<String> = ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"]

    /// The page at item `id`: the running one's launcher, or a page started for it. Blocks up to
    /// ``deadline`` while a started page comes up (call it on a thread of its own).
    func open(item id: Int64) -> Outcome {
        let folder: String
        do { folder = try ReviewPageAddress.folder(environment: environment) } catch { return .failed("\(error)") }
        let path = "/item/\(id)"
        if let running = ReviewPageAddress.running(in: folder) {
            guard let launcher = ReviewPageAddress.launcher(for: ReviewPageAddress.address(running.url, at: path), in: folder) else {
                return .failed("cannot write the page that opens it in \(folder)")
            }
            return .running(launcher: launcher)
        }
        let environment = environment.filter { !Self.serviceVariables.contains($0.key) }
        guard let executable else { return .failed("this program's own path is unknown (/proc/self/exe)") }
        // Only the item's number on the command line: the page makes its secret itself.
        guard let command = DetachedProgram.desktopCommand(executable, ["review", "--item", "\(id)"], environment: environment, discardingOutput: true) else {
            return .failed("\(executable) is not there any more")
        }
        let exit = Locked<Int32?>(nil)
        let pid: pid_t
        switch DetachedProgram.start(command, environment: environment, discardingOutput: true, exited: { status in exit.withLock { $0 = status } }) {
        case .success(let started): pid = started
        case .failure(let error): return .failed("\(command[0]) could not start: \(error)")
        }
        // Through systemd-run the pid is systemd-run's, which exits once the unit is queued.
        let throughUnit = command[0] != executable
        let end = ContinuousClock.now + deadline
        while ContinuousClock.now < end {
            if let running = ReviewPageAddress.running(in: folder) { return .started(pid: running.pid) }
            if let status = exit.withLock({ $0 }) {
                if !throughUnit || status != 0 {
                    // It may have found a page started meanwhile, and opened that.
                    if let running = ReviewPageAddress.running(in: folder) { return .started(pid: running.pid) }
                    return .failed("'\((command[0] as NSString).lastPathComponent) \(throughUnit ? "--user" : "review --item \(id)")' \(Self.describe(status))")
                }
            }
            usleep(50_000)
        }
        // Not up in time: stopped, so that it does not open late on top of the preview copy.
        if !throughUnit, exit.withLock({ $0 }) == nil { kill(pid, SIGTERM) }
        return .failed("no review page after \(deadline)")
    }

    /// A wait status in words.
    static func describe(_ status: Int32) -> String {
        status & 0x7f == 0 ? "exited with status \((status >> 8) & 0xff)" : "was killed by signal \(status & 0x7f)"
    }

    /// This program's path, from the kernel; a binary replaced since (an upgrade) is run from
    /// its path, the new one.
    static func ownExecutable() -> String? {
        guard let path = ModelCatalog.executablePath() else { return nil }
        return path.hasSuffix(" (deleted)") ? String(path.dropLast(" (deleted)".count)) : path
    }
}
