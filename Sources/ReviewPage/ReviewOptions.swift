import Foundation
import QuarantineBackend
import QuarantineCore

/// What one start of the review page serves, and for how long.
public struct ReviewOptions: Sendable {
    /// The person's own backend (their vault, or the guardian service protecting them).
    public var own: any QuarantineBackend
    /// The accounts a guardian may look after from this page (empty unless the person is root
    /// or a member of quarantine-guardians).
    public var guardedAccounts: @Sendable () -> [String]
    /// The backend of a guarded account (its guardian service's socket).
    public var guardedBackend: @Sendable (String) throws -> any QuarantineBackend
    /// The server stops after this many seconds without a request.
    public var idleTimeout: TimeInterval
    /// A private folder (0700, this user's) for the file with the page's address and secret.
    public var stateFolder: String
    /// The port to bind on 127.0.0.1 (0: one the kernel picks).
    public var port: Int
    /// Whether SIGINT and SIGTERM stop it (the command's; not a test process's).
    public var handlesSignals = true

    public init(own: any QuarantineBackend, guardedAccounts: @escaping @Sendable () -> [String] = { [] },
                guardedBackend: @escaping @Sendable (String) throws -> any QuarantineBackend = { throw BackendError.unreachable("no guardian service for \($0)") },
                idleTimeout: TimeInterval = 600, stateFolder: String, port: Int = 0) {
        self.own = own
        self.guardedAccounts = guardedAccounts
        self.guardedBackend = guardedBackend
        self.idleTimeout = idleTimeout
        self.stateFolder = stateFolder
        self.port = port
    }

    /// The folder for the address file (``ReviewPageAddress/folder(environment:)``).
    public static func stateFolder(environment: [String: String]) throws -> String {
        do { return try ReviewPageAddress.folder(environment: environment) } catch {
            throw ReviewServer.Failure("\(error); the page's secret is not written there")
        }
    }
}
