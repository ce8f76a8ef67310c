import Foundation
import GRDB

/// What is wrong with the audit database when SQLite refuses it, named after what the person
/// sees and can fix (a file mode, another program, a damaged file, a full disk), by the result
/// code SQLite gave.
///
/// Only these faults stop the agent's analyses: each is a state of the file or of the system,
/// which lasts until someone fixes it (or the other program lets go). Anything else SQLite says
/// (a constraint, a misuse) is a bug of one request, not a fault of the database.
public enum DatabaseFault: String, Sendable, Equatable, Codable {
    /// SQLITE_READONLY: the file, its folder or the file system cannot be written.
    case readOnly = "read_only"
    /// SQLITE_READONLY_DBMOVED: the file this connection writes was deleted or renamed.
    case moved
    /// SQLITE_BUSY or SQLITE_LOCKED after the busy timeout: another process holds the lock.
    case locked
    /// SQLITE_CORRUPT or SQLITE_NOTADB: a damaged page, or not a database at all.
    case damaged
    /// SQLITE_IOERR: the disk or the file system failed a read or a write.
    case ioError = "io_error"
    /// SQLITE_FULL: no room left on the disk.
    case full
    /// SQLITE_CANTOPEN or SQLITE_PERM: the file, or its -wal/-shm, cannot be opened at all.
    case cannotOpen = "cannot_open"

    /// The fault `error` reveals, or nil when it is not a fault of the database itself.
    public init?(_ error: any Error) {
        if let fault = error as? DatabaseFaultError { self = fault.fault; return }
        guard let error = error as? DatabaseError else { return nil }
        if error.extendedResultCode == .SQLITE_READONLY_DBMOVED { self = .moved; return }
        switch error.resultCode {
        case .SQLITE_READONLY: self = .readOnly
        case .SQLITE_BUSY, .SQLITE_LOCKED: self = .locked
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: self = .damaged
        case .SQLITE_IOERR: self = .ioError
        case .SQLITE_FULL: self = .full
        case .SQLITE_CANTOPEN, .SQLITE_PERM: self = .cannotOpen
        default: return nil
        }
    }

    /// What is wrong with the database at `path` and what to do about it, in one sentence.
    public func message(path: String) -> String {
        switch self {
        case .readOnly:
            return "the audit database \(path) is read-only (its file mode, its folder's, or a read-only file system): "
                + "make the file and its folder writable (SQLite writes its -wal and -shm beside it)"
        case .moved:
            return "the audit database \(path) was deleted or renamed while it was open"
        case .locked:
            return "the audit database \(path) is locked by another process (still busy after the 10-s timeout): "
                + "find the program holding it ('fuser \(path)') and end it or let it finish"
        case .damaged:
            return "the audit database \(path) is damaged (SQLite: database disk image is malformed): "
                + "run 'quarantine doctor --repair' (it moves the damaged file aside, never deletes it, and lists the vault's items again from their meta.json)"
        case .ioError:
            return "the audit database \(path) cannot be read or written (an I/O error): check the disk and its file system ('dmesg')"
        case .full:
            return "the disk holding the audit database \(path) is full: make room on it"
        case .cannotOpen:
            return "the audit database \(path) cannot be opened (its folder missing or not writable, or its -wal or -shm cannot be created): "
                + "check that the folder exists and that it and the files in it are yours and writable"
        }
    }
}

/// The audit database could not be opened or checked: which fault, at which path, and SQLite's
/// own words.
public struct DatabaseFaultError: Error, CustomStringConvertible, Sendable {
    public var fault: DatabaseFault
    public var path: String
    /// What SQLite (or GRDB) said.
    public var underlying: String

    public init(fault: DatabaseFault, path: String, underlying: String) {
        self.fault = fault
        self.path = path
        self.underlying = underlying
    }

    public var description: String { "\(fault.message(path: path)) [\(underlying)]" }
}
