import CSystemShims
import Foundation
import Locking
import PathBytes

/// Which files were being judged in this process when it died of a fatal signal, so that only
/// crashes the program observes count against a file (issue 27: the agent killed twice while a
/// card was in flight gave the card up as "crashed the analysis 2 times").
///
/// The journal (`audit.sqlite3.crashed-in-flight`, beside the database) is written by a signal
/// handler (``qsys_crash_journal_install``) on SIGSEGV, SIGBUS, SIGABRT, SIGILL or SIGFPE: one
/// path per line. A SIGKILL, a power cut or the OOM killer writes nothing, and counts nothing. At
/// the next start ``takeCrashes()`` reads it, counts one crash per file and empties it. Files
/// judged by the confined worker are the worker's crashes: the agent sees those die (see
/// SandboxedAnalysis), and this journal is for what runs in the agent's own process.
final class CrashJournal: Sendable {
    let path: String
    let descriptor: Int32

    /// Opens (creating) the journal beside the database at `databasePath` and installs the handlers.
    init(databasePath: String) throws {
        path = databasePath + ".crashed-in-flight"
        let fd = open(PathBytes.cString(path), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path, NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)]) }
        descriptor = fd
    }

    /// The files the last run was judging when it crashed (each once), the journal emptied.
    /// Call before ``install()``.
    func takeCrashes() -> [String] {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return [] }
        _ = ftruncate(descriptor, 0)
        var seen = Set<String>()
        return data.split(separator: UInt8(ascii: "\n")).map { PathBytes.string($0) }.filter { !$0.isEmpty && seen.insert($0).inserted }
    }

    /// From now on a fatal signal writes the files in flight into the journal.
    func install() -> Bool { qsys_crash_journal_install(descriptor) == 0 }

    /// Runs `body` with `path` registered as in flight.
    func inFlight<T>(_ path: String, _ body: () async -> T) async -> T {
        let slot = qsys_crash_inflight_add(PathBytes.cString(path))
        defer { qsys_crash_inflight_remove(slot) }
        return await body()
    }
}
