import Foundation

/// Another process holding the write lock of an SQLite database, as a backup tool or a second
/// program would: python3's sqlite3 module runs `BEGIN EXCLUSIVE` and keeps the transaction open
/// until ``release()``. In WAL mode readers still read; every writer waits, then gets SQLITE_BUSY.
public final class DatabaseLocker: @unchecked Sendable {
    let process = Process()
    let input = Pipe()
    public var pid: Int32 { process.processIdentifier }

    /// Starts the process and returns once it holds the lock.
    public init(path: String) throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
            c.execute("BEGIN EXCLUSIVE")
            print("locked", flush=True)
            sys.stdin.read()
            c.execute("ROLLBACK")
            """, path]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let line = output.fileHandleForReading.readData(ofLength: 7)
        guard String(decoding: line, as: UTF8.self).hasPrefix("locked") else {
            process.terminate()
            throw CocoaError(.fileLocking, userInfo: [NSLocalizedDescriptionKey: "python3 could not lock \(path)"])
        }
    }

    /// Ends the transaction and the process.
    public func release() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    deinit { release() }
}
