import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A program run to its end with posix_spawn, its output captured: what the end-to-end tests use
/// for the hundreds of CLI runs they make, instead of Foundation's `Process`.
///
/// `Process.run()` of Swift 6.3.1's Foundation reads 256 bytes past a `dirent` while it lists
/// /proc/self/fd, and crashes the whole test process when the entry sits at the end of a page
/// (swift-corelibs-foundation PR #5472; seen here as "Bad pointer dereference ... in
/// Process.run()" once tests ran side by side, with more descriptors open). This spawns
/// directly: standard input /dev/null, output and errors into pipes read until both end, every
/// other descriptor closed in the child, and the process killed if it outlives `timeout`.
public struct Spawned: Sendable {
    public var status: Int32
    public var stdout: Data
    public var stderr: Data
    /// It ran past its time limit and was killed (SIGKILL).
    public var timedOut: Bool

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Runs `executable` with `arguments` (argv[0] is the executable's path) and exactly
    /// `environment`. `status` is the exit status, or the number of the signal that ended it
    /// (as Foundation's `terminationStatus` has it).
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String],
                           timeout: Double) throws -> Spawned {
        var outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        guard pipe(&outPipe) == 0 else { throw Failure(description: "pipe: \(String(cString: strerror(errno)))") }
        guard pipe(&errPipe) == 0 else {
            close(outPipe[0]); close(outPipe[1])
            throw Failure(description: "pipe: \(String(cString: strerror(errno)))")
        }
        // Close-on-exec (pipe2 is not in Swift's Glibc module); children spawned here close
        // everything above 2 anyway.
        for fd in outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        close(outPipe[1]); close(errPipe[1])
        guard spawned == 0 else {
            close(outPipe[0]); close(errPipe[0])
            throw Failure(description: "cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        // Both pipes read on this thread with poll(2), until both end; killed at the deadline.
        var out = Data(), err = Data(), timedOut = false
        var open: [Int32: Bool] = [outPipe[0]: true, errPipe[0]: true]
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while open.values.contains(true) {
            var fds = open.filter(\.value).map { pollfd(fd: $0.key, events: Int16(POLLIN), revents: 0) }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 && !timedOut { timedOut = true; kill(pid, SIGKILL) }
            let ready = poll(&fds, nfds_t(fds.count), timedOut ? -1 : Int32(min(left, 3600) * 1000) + 1)
            if ready < 0 && errno != EINTR { break }
            for entry in fds where entry.revents != 0 {
                let count = read(entry.fd, &buffer, buffer.count)
                if count > 0 {
                    if entry.fd == outPipe[0] { out.append(contentsOf: buffer[0..<count]) } else { err.append(contentsOf: buffer[0..<count]) }
                } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                    open[entry.fd] = false
                }
            }
        }
        close(outPipe[0]); close(errPipe[0])
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        let signal = raw & 0x7f
        let status = signal == 0 ? (raw >> 8) & 0xff : signal
        return Spawned(status: status, stdout: out, stderr: err, timedOut: timedOut)
    }

    /// glibc's posix_spawn_file_actions_addclosefrom_np (2.34), which Swift's Glibc module does not show.
    /// (Where it is missing, the pipes' close-on-exec still keeps them out of other children.)
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()
}
