import Foundation
import GRDB
import QuarantineBase

/// One file kept in the vault, with everything needed to put it back exactly as it was.
public struct VaultItem: Codable, Sendable, FetchableRecord, MutablePersistableRecord, Identifiable {
    public static let databaseTableName = "item"

    public enum Status: String, Sendable, Codable, CaseIterable {
        /// A move into the vault is under way (see the journal).
        case quarantining
        case quarantined
        /// A move back out is under way.
        case releasing
        case released
        /// Deleted by `block`; its hash is on the block list.
        case blocked
        /// Kept in the vault for good by `block --keep`.
        case sealed
        case purged

        /// Still in the vault (hidden or sealed).
        public var isInVault: Bool { self == .quarantined || self == .sealed }
    }

    public var id: Int64?
    public var createdAt: Date
    public var originalPath: String
    /// Folder name inside the vault, once there.
    public var vaultName: String?
    public var previewName: String?
    public var size: Int64
    public var sha256: String
    public var mode: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var accessNanoseconds: Int64
    public var modificationNanoseconds: Int64
    /// Extended attributes, name to value, as JSON (values base64).
    public var extendedAttributes: Data
    public var originURL: String?
    public var referrerURL: String?
    /// JSON array of the verdict's reasons, e.g. ["FEMALE_BREAST_EXPOSED 0.83"].
    public var reasons: String
    public var analysisMode: AnalysisMode
    public var status: Status
    /// The original folder's path with every symbolic link resolved, when it was hidden: a
    /// release follows a link in the folder's path only when it still leads there.
    public var folderRealPath: String? = nil

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    public var reasonList: [String] { (try? JSONDecoder().decode([String].self, from: Data(reasons.utf8))) ?? [] }

    public var attributes: [String: Data] {
        let encoded = (try? JSONDecoder().decode([String: String].self, from: extendedAttributes)) ?? [:]
        return encoded.compactMapValues { Data(base64Encoded: $0) }
    }

    static func encode(attributes: [String: Data]) -> Data {
        (try? JSONEncoder().encode(attributes.mapValues { $0.base64EncodedString() })) ?? Data("{}".utf8)
    }
}

extension VaultItem.Status: DatabaseValueConvertible {}

/// Where a downloaded file came from, when the file itself does not say (no
/// `user.xdg.origin.url`): the URL of its bytes and the page, as the browser's own download
/// history recorded them.
public struct DownloadSource: Sendable, Equatable, Codable {
    /// The URL the bytes came from (the end of any redirects).
    public var url: String
    /// The page it was downloaded from, when known.
    public var referrer: String?
    /// Which browser's history said so ("Firefox", "Chromium"...).
    public var source: String

    public init(url: String, referrer: String?, source: String) {
        self.url = url
        self.referrer = referrer
        self.source = source
    }

    /// The URL's host, lower case (what `block --origin` blocks).
    public var host: String? { URL(string: url)?.host?.lowercased() }
}
