import Foundation
import QuarantineStore

// MARK: - From the database's records to the wire's values

extension GuardianWire.Item {
    /// What a person may see of `item` (nil when it has no id: it was never stored).
    public init?(_ item: VaultItem) {
        guard let id = item.id else { return nil }
        self.init(id: id, createdAt: item.createdAt, originalPath: item.originalPath, size: item.size, sha256: item.sha256, reasons: item.reasonList,
                  analysisMode: item.analysisMode, status: item.status.rawValue, hasPreview: item.previewName != nil,
                  originURL: item.originURL, referrerURL: item.referrerURL)
    }
}

extension GuardianWire.Event {
    /// `event` as the wire carries it (nil when it has no id: it was never stored).
    public init?(_ event: AuditEvent) {
        guard let id = event.id else { return nil }
        self.init(id: id, itemId: event.itemId, at: event.at, kind: event.kind.rawValue, mode: event.mode, actor: event.actor, path: event.path, detail: event.detail)
    }
}

extension GuardianWire.ServiceStatus {
    /// What the agent published.
    public init(_ status: AgentStatus) {
        self.init(state: status.state, updatedAt: status.updatedAt,
                  folders: status.roots.map { .init(path: $0.path, direction: $0.direction.rawValue, state: $0.state) },
                  queueDepth: status.queueDepth, inFlight: status.inFlight.count, problem: status.problem, analysis: status.analysis,
                  unwatched: status.unwatched, databaseFault: status.databaseFault)
    }
}
