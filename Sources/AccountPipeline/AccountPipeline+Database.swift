import QuarantineBase
import Foundation
import Logging
import QuarantineStore

extension AccountPipeline {
    /// How often a database that refused a write is tried again, and how often the agent looks
    /// whether the file at its path is still the one it opened.
    static let databaseProbeInterval = Duration.seconds(3)

    // MARK: - Opening at start

    /// The vault and its database, opened as the agent starts. A database another process keeps
    /// busy (a command or another program holding its lock as the agent creates or migrates it)
    /// never ends the agent: under systemd a few such exits in a row use up the unit's start
    /// limit, and protection would stay off. It waits instead, as for a read-only file system:
    /// says so once, tries again (soon at first, then every ``databaseProbeInterval``), and
    /// starts once the database opens. Each try itself waits `busyTimeout` for the lock. Other
    /// faults end the start as before. A stop asked while waiting (`stopRequested`, checked
    /// between tries) ends the start with ``StoppedWhileStarting``.
    static func openVault(environment: [String: String], logger: Logger, busyTimeout: Double = 10,
                          stopRequested: @Sendable () -> Bool = { false }) throws -> Vault {
        var waited = false
        var pause = 0.1
        while true {
            do {
                let vault = try Vault.standard(environment: environment, busyTimeout: busyTimeout)
                if waited { logger.notice("the audit database \(vault.store.path) opened: starting") }
                return vault
            } catch let error as DatabaseFaultError where error.fault == .locked {
                if !waited {
                    logger.warning("\(error.fault.message(path: error.path)); waiting for it (tried again every \(Self.databaseProbeInterval.components.seconds) s at most) [\(error.underlying)]")
                    waited = true
                }
                // Slept in steps of at most 0.1 s, each followed by a look for a stop.
                let until = Date().addingTimeInterval(pause)
                while Date() < until {
                    if stopRequested() { throw StoppedWhileStarting() }
                    Thread.sleep(forTimeInterval: min(0.1, max(0, until.timeIntervalSinceNow)))
                }
                if stopRequested() { throw StoppedWhileStarting() }
                pause = min(pause * 2, Double(Self.databaseProbeInterval.components.seconds))
            }
        }
    }

    // MARK: - The database's health gate

    /// Closes the gate when a write ran into a fault of the database (read-only, locked past the
    /// busy timeout, damaged, an I/O error, a full disk): no new analysis starts, since its verdict
    /// could not be recorded (the file would be analysed again and again, its verdict lost each
    /// time). Files stay where they are and queued (in the backlog, or in memory when even that
    /// cannot be written). Says what is wrong once; ``watchDatabase()`` tries it again.
    func noteDatabaseFaults() {
        guard let fault = vault.store.takeWriteFault() else { return }
        closeDatabaseGate(fault, detail: nil)
    }

    func closeDatabaseGate(_ fault: DatabaseFault, detail: String?) {
        let message = fault.message(path: vault.store.path)
            + "; files that arrive are left where they are and checked once it works again (tried every \(Self.databaseProbeInterval.components.seconds) s)"
        let changed = databaseGate.gate.withLock { gate -> Bool in
            defer { gate.fault = fault; gate.problem = message }
            return gate.fault != fault
        }
        guard changed else { return }
        logger.error("\(message)\(detail.map { " [\($0)]" } ?? "")")
        _ = systemd?.notify("STATUS=\(message)")
        // Shown by `status` at once, beside the agent's lock: a publication under way when the
        // database was locked waits for the busy timeout (10 s) before it fails and tries again.
        AgentStatus.writeBesideTheLock(currentStatus(readingTheDatabase: false), environment: options.environment)
        publishSoon()
    }

    /// Every ``databaseProbeInterval``: when the file at the database's path is no longer the one
    /// open (deleted, or replaced by `quarantine doctor --repair`), opens the one there; while
    /// the gate is closed, tries a real write (and, for a damaged file, SQLite's quick_check)
    /// and reopens the gate when it works. A child task of ``run()``.
    func watchDatabase() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.databaseProbeInterval)
            if Task.isCancelled { return }
            if !vault.store.isStillInPlace { await reopenReplacedDatabase() }
            noteDatabaseFaults()
            guard let fault = databaseGate.fault else { continue }
            let store = vault.store
            let failure = try? await onOwnThread("database-probe") { () -> DatabaseFaultError? in
                do {
                    // SQLite opens a file it cannot write read-only, and that connection stays so.
                    if fault == .readOnly || fault == .cannotOpen { try store.reopen() }
                    try store.probe(checkIntegrity: fault == .damaged)
                    return nil
                } catch let error as DatabaseFaultError {
                    return error
                } catch {
                    return DatabaseFaultError(fault: fault, path: store.path, underlying: "\(error)")
                }
            }
            if let failure {
                if failure.fault != fault { closeDatabaseGate(failure.fault, detail: failure.underlying) }
                else { logger.debug("the audit database still refuses: \(failure.underlying)") }
                continue
            }
            databaseRecovered(from: fault)
        }
    }

    /// The database works again: analyses resume, the kept files are queued, the status goes back
    /// into the database.
    func databaseRecovered(from fault: DatabaseFault) {
        databaseGate.gate.withLock { gate in
            gate.fault = nil
            gate.problem = nil
        }
        intakeState.batches.withLock { $0.retryNow = true }
        _ = vault.store.takeWriteFault()
        logger.notice("the audit database \(vault.store.path) works again (it was \(fault.rawValue.replacingOccurrences(of: "_", with: " "))): the files waiting are checked now")
        _ = systemd?.notify("STATUS=Watching")
        intakeState.continuation.yield()
        wakeContinuation.yield()
        publishSoon()
    }

    /// The file at the database's path is not the one open: deleted (a new, empty one is made) or
    /// replaced (`doctor --repair` moved a damaged one aside). Opens what is there, lists again the
    /// vault's items it lacks (from each folder's meta.json) and looks through the watched folders
    /// again, so the files its backlog lacks are queued again. Said once, loudly: the history and
    /// the allow and block lists are those of the file now there.
    func reopenReplacedDatabase() async {
        let (store, vault, actor) = (self.vault.store, self.vault, options.actor)
        let existed = FileManager.default.fileExists(atPath: store.path)
        do {
            let relisted = try await onOwnThread("database-reopen") { () -> [String] in
                try store.reopen()
                return try vault.repair(actor: actor)
            }
            logger.critical("the audit database \(store.path) was deleted or replaced while the agent runs: opened \(existed ? "the file now there" : "a new one"), listed again \(relisted.count) vault item(s) from their meta.json, and the watched folders are looked through again; the history and the allow and block lists are those of the file now there")
            for line in relisted { logger.notice("listed again: \(line)") }
            _ = store.takeWriteFault()
            let fault = databaseGate.gate.withLock { gate -> DatabaseFault? in
                defer { gate.fault = nil; gate.problem = nil }
                return gate.fault
            }
            intakeState.batches.withLock { $0.retryNow = true }
            if let fault { logger.notice("the audit database works again (it was \(fault.rawValue.replacingOccurrences(of: "_", with: " ")))") }
            watcher()?.rescan()
            intakeState.continuation.yield()
            wakeContinuation.yield()
            publishSoon()
        } catch {
            closeDatabaseGate(DatabaseFault(error) ?? .cannotOpen, detail: "\(error)")
        }
    }
}
