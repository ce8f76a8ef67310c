import Foundation
import GuardianAPI
import PathBytes
import QuarantineStore
import SensitivityAnalysis

/// What `list`, `show`, `history`, `status`, `mode`, `watch list` and `count` print with
/// `--json`: the field names scripts read, as Encodable values (see ``JSONOutput``).
enum ReviewJSON {
    /// One vault item (`list`: one a line, with `release_requested_at`; `show`: with its
    /// `preview` and `events`).
    struct Item: Encodable {
        var id: Int64
        var when: Date
        var originalPath: String
        var originalPathBytes: String
        var reasons: [String]
        var size: Int64
        var status: String
        var sha256: String
        var mode: AnalysisMode
        var hasPreview: Bool
        var originURL: String?
        var referrerURL: String?
        var releaseRequestedAt: Date?
        var preview: String?
        var events: [ItemEvent]?

        enum CodingKeys: String, CodingKey {
            case id, when, reasons, size, status, sha256, mode, preview, events
            case originalPath = "original_path", originalPathBytes = "original_path_bytes", hasPreview = "has_preview"
            case originURL = "origin_url", referrerURL = "referrer_url", releaseRequestedAt = "release_requested_at"
        }

        init(_ item: GuardianWire.Item, releaseRequestedAt: Date? = nil, preview: String? = nil, events: [ItemEvent]? = nil) {
            id = item.id
            when = item.createdAt
            originalPath = PathBytes.display(item.originalPath)
            originalPathBytes = PathBytes.base64(item.originalPath)
            reasons = item.reasons
            size = item.size
            status = item.status
            sha256 = item.sha256
            mode = item.analysisMode
            hasPreview = item.hasPreview
            originURL = item.originURL
            referrerURL = item.referrerURL
            self.releaseRequestedAt = releaseRequestedAt
            self.preview = preview
            self.events = events
        }
    }

    /// One event of an item, in `show`.
    struct ItemEvent: Encodable {
        var at: Date
        var kind: String
        var actor: String
        /// "" when the event has none.
        var detail: String

        init(_ event: GuardianWire.Event) {
            at = event.at
            kind = event.kind
            actor = event.actor
            detail = event.detail ?? ""
        }
    }

    /// One line of `history`.
    struct Event: Encodable {
        var at: Date
        var kind: String
        var mode: AnalysisMode
        var actor: String
        var item: Int64?
        var path: String?
        var pathBytes: String?
        var detail: String?

        enum CodingKeys: String, CodingKey {
            case at, kind, mode, actor, item, path, detail
            case pathBytes = "path_bytes"
        }

        init(_ event: GuardianWire.Event) {
            at = event.at
            kind = event.kind
            mode = event.mode
            actor = event.actor
            item = event.itemId
            path = event.path.map(PathBytes.display)
            pathBytes = event.path.map(PathBytes.base64)
            detail = event.detail
        }
    }

    /// `status`: whether the agent runs, what waits, and what it published last.
    struct Status: Encodable {
        var running: Bool
        var queueDepth: Int
        var pid: Int32?
        var lastStatus: AgentStatus?

        enum CodingKeys: String, CodingKey {
            case running, pid
            case queueDepth = "queue_depth", lastStatus = "last_status"
        }
    }

    /// `mode --json`.
    struct Mode: Encodable {
        var mode: AnalysisMode
        /// Why it is stricter than the configuration says (locally).
        var note: String?
        /// The protected account (through its guardian service).
        var user: String?
    }

    /// `watch list --json`.
    struct WatchList: Encodable {
        struct Folder: Encodable {
            var path: String
            var direction: String
            var active: Bool
        }
        var mode: AnalysisMode
        var defaultDownloadFolder: Bool
        var folders: [Folder]

        enum CodingKeys: String, CodingKey {
            case mode, folders
            case defaultDownloadFolder = "default_download_folder"
        }
    }
}
