import Foundation
import QuarantineBase

/// Where a protected account's guardian service keeps things. The child owns none of it.
public struct GuardianPaths: Sendable, Equatable {
    /// The protected account.
    public var user: String

    public init(user: String) { self.user = user }

    /// Its configuration (mode, folders, policies): root's, read by the service.
    public var configuration: String { Paths.systemConfigurationFolder + "/\(user).toml" }
    /// Its database, vault and previews (0700, the service's system user).
    public var state: String { Paths.systemState + "/\(user)" }
    /// The service's socket: the child's and the guardians' CLI connect here.
    public var socket: String { Self.socketFolder + "/\(user).sock" }

    public static let socketFolder = Paths.socketFolder
    /// The ONNX Runtime and the models the guardian services load (root's copy, `lib/` and
    /// `models/`): nothing the child owns is ever loaded.
    public static let runtime = Paths.systemState + "/runtime"
    /// Members may act as guardian from their own accounts.
    public static let guardiansGroup = "quarantine-guardians"
    /// The system user the services run as.
    public static let serviceUser = "quarantine"

    /// Whether `uid` may act as guardian: root, or in the `quarantine-guardians` group (as a
    /// member or by its own group). Safe on any thread (``AccountLookup``).
    public static func isGuardian(uid: uid_t) -> Bool {
        uid == 0 || AccountLookup.isMember(uid: uid, ofGroup: guardiansGroup)
    }

    /// The accounts whose guardian service answers here (a socket in ``socketFolder``).
    public static func servedAccounts() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: socketFolder)) ?? []).filter { $0.hasSuffix(".sock") }.map { String($0.dropLast(5)) }.sorted()
    }
}
