import QuarantineStore
import SensitivityAnalysis

/// What the allow and block lists (and the verdicts already given) say about a file's bytes,
/// before any analysis. The agent and `scan --quarantine` both decide through this.
public enum ListCheck: Sendable, Equatable {
    /// Released before: its bytes are on the allow list. Left alone, never hidden again.
    case allowed
    /// On the block list, or (with `site`, its host) from a blocked site: hidden without analysis.
    case blocked(reason: String, site: String? = nil)
    /// The same bytes were found not sensitive in this mode before.
    case knownClean
    /// Nothing known: analyse it.
    case analyse

    /// Checks, in this order: the allow list (a release made in adult mode does not hold in child
    /// mode), the block list, blocked origins, then (when
    /// `reuseVerdicts`) earlier clean verdicts in `mode`.
    public static func check(sha256: String, originHost: String?, mode: AnalysisMode, store: AuditStore, reuseVerdicts: Bool = true) throws -> ListCheck {
        if try store.isAllowed(sha256: sha256, in: mode) { return .allowed }
        if let reason = try store.blockReason(sha256: sha256) { return .blocked(reason: "on the block list: \(reason)") }
        if let host = originHost, try store.isBlocked(host: host) { return .blocked(reason: AuditStore.blockedSiteReason(host), site: host) }
        if reuseVerdicts, try store.verdict(sha256: sha256, mode: mode) == .clean { return .knownClean }
        return .analyse
    }
}
