import Foundation
import QuarantineStore
import SensitivityAnalysis

/// The review use cases: what a person may see and do with what the vault holds, under the mode
/// in force. The CLI asks the questions that ``approval(for:)`` names, hands the answers to
/// ``consent(to:confirmed:pin:)``, and passes the ``Consent`` it gets to the action: no action
/// that weakens protection runs without one.
public struct Review: Sendable {
    public let vault: Vault
    public let mode: ModeInForce
    let guardian: GuardianPIN
    let clock: @Sendable () -> Date
    let actorName: String?

    /// `actor` names who acts in the audit log (default: "guardian" in child mode, else "cli").
    public init(vault: Vault, mode: ModeInForce, actor: String? = nil, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.vault = vault
        self.mode = mode
        self.guardian = GuardianPIN(store: vault.store)
        self.clock = clock
        self.actorName = actor
    }

    /// The per-user vault's review, in the mode in force for this user.
    public static func current(vault: Vault) -> Review {
        Review(vault: vault, mode: ModeInForce.current(store: vault.store))
    }

    /// Who is recorded as acting: the guardian in child mode (their PIN was given), else the person.
    public var actor: String { actorName ?? (mode.mode == .child ? "guardian" : "cli") }

    /// Whether a guardian PIN is set.
    public var pinIsSet: Bool { guardian.isSet }

    /// The consent of a guardian the kernel identified (the guardian service checked the
    /// caller's user with SO_PEERCRED: root, or a member of `quarantine-guardians`): a guardian
    /// acting from their own account needs no PIN. Only the service calls this.
    public func guardianConsent(to action: ProtectedAction) -> Consent { Consent(action) }

    /// The consent `caller` gives through the guardian service, as
    /// ``GuardianRules/approval(for:in:pinIsSet:caller:)`` rules: a guardian's is theirs; the
    /// protected account's is its request (confirmed) and, in child mode, the guardian `pin`.
    public func consent(to action: ProtectedAction, by caller: GuardianCaller, pin: String?) throws -> Consent {
        if GuardianRules.approval(for: action, in: mode.mode, pinIsSet: guardian.isSet, caller: caller) == .none { return Consent(action) }
        return try consent(to: action, confirmed: true, pin: pin)
    }

    // MARK: - Consent

    /// What must happen before `action`.
    public func approval(for action: ProtectedAction) -> Approval {
        GuardianRules.approval(for: action, in: mode.mode, pinIsSet: guardian.isSet)
    }

    /// Proof that the rules for an action were met; only ``consent(to:confirmed:pin:)`` makes one.
    public struct Consent: Sendable {
        public let action: ProtectedAction
        fileprivate init(_ action: ProtectedAction) { self.action = action }
    }

    /// Why there is no consent.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// Adult mode: the person did not confirm (no terminal, no `--yes`, or "no").
        case notConfirmed
        /// Child mode: the PIN is not the guardian's; the next try waits `wait` seconds (0: none).
        case wrongPIN(wait: TimeInterval = 0)
        /// Child mode: too many wrong PINs; the PIN was not checked, the next try is at `until`.
        case waitForPIN(until: Date)
        /// The action is not possible now (child mode without a PIN set, say).
        case refused(String)

        public var description: String {
            switch self {
            case .notConfirmed: return "not confirmed"
            case .wrongPIN(let wait): return "that PIN is not right" + (wait > 0 ? "; the next try must wait \(GuardianPIN.describe(wait))" : "")
            case .waitForPIN(let until): return "too many wrong PINs; try again in \(GuardianPIN.describe(until.timeIntervalSinceNow))"
            case .refused(let reason): return reason
            }
        }
    }

    /// Checks the answers against the rules: adult mode needs `confirmed`, child mode the
    /// guardian's `pin`.
    public func consent(to action: ProtectedAction, confirmed: Bool, pin: String?) throws -> Consent {
        switch approval(for: action) {
        case .none:
            return Consent(action)
        case .confirmation:
            guard confirmed else { throw Refusal.notConfirmed }
            return Consent(action)
        case .guardianPIN:
            guard let pin else { throw Refusal.wrongPIN() }
            switch try guardian.check(pin, actor: actorName ?? "cli", now: clock()) {
            case .accepted: return Consent(action)
            case .wrong(_, let wait): throw Refusal.wrongPIN(wait: wait)
            case .locked(let until): throw Refusal.waitForPIN(until: until)
            }
        case .refused(let reason):
            throw Refusal.refused(reason)
        }
    }

    func require(_ consent: Consent, for action: ProtectedAction) {
        precondition(consent.action == action, "a consent to \(consent.action) was given for \(action)")
    }

    // MARK: - Seeing

    /// Items, newest first; without `includeClosed` only those still in the vault.
    public func items(includeClosed: Bool = false, before: Int64? = nil, limit: Int? = nil) throws -> [VaultItem] {
        try vault.store.items(includeClosed: includeClosed, before: before, limit: limit)
    }

    public func item(_ id: Int64) throws -> VaultItem? { try vault.store.item(id) }

    /// The audit log, newest first, optionally of one item; with `before` and `limit`, one page of
    /// it (at most `limit` events older than event `before`).
    public func history(of itemId: Int64? = nil, before: Int64? = nil, limit: Int? = nil) throws -> [AuditEvent] {
        try vault.store.events(itemId: itemId, before: before, limit: limit)
    }

    /// The blurred preview of an item, if it has one on disk (never the original).
    public func preview(of item: VaultItem) -> String? {
        vault.previewPath(of: item).flatMap { FileManager.default.fileExists(atPath: $0) ? $0 : nil }
    }

    /// The blurred preview of `item`, opened to be handed over, with its bytes on the allow list
    /// first: the preview is what the person may see, so the copy a protected account's CLI
    /// writes to show it (in `/tmp`, which the guardian service watches) is never hidden as a new
    /// file (the test card stays a card when blurred; a real picture may too).
    public func openPreview(of item: VaultItem) -> Int32? {
        guard let path = preview(of: item) else { return nil }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        if let sha256 = try? Vault.sha256(fd: fd) {
            try? vault.store.allow(sha256: sha256, itemId: item.id, mode: .child)
        }
        guard lseek(fd, 0, SEEK_SET) == 0 else { close(fd); return nil }
        return fd
    }

    // MARK: - Acting

    /// Puts item `id` back (see ``Vault/release(id:to:mode:actor:)``).
    public func release(_ id: Int64, to directory: String? = nil, consent: Consent) throws -> Vault.Release {
        require(consent, for: .release)
        return try vault.release(id: id, to: directory, mode: mode.mode, actor: actor)
    }

    /// Records that the person asks for item `id` back without the PIN (child mode): the
    /// guardian sees it in `quarantine list`. Asking weakens nothing, so it needs no consent;
    /// adult mode has no one to ask.
    public func requestRelease(_ id: Int64) throws {
        guard mode.mode == .child else { throw Refusal.refused("asking a guardian is for child mode; in adult mode, release it yourself") }
        guard let item = try vault.store.item(id), item.status == .quarantined else { throw Refusal.refused("item \(id) is not in the vault") }
        try vault.store.requestRelease(itemId: id, mode: mode.mode, actor: "cli", at: clock())
    }

    /// The original of item `id`, opened read only to be shown (the review page's Show), and
    /// recorded in the audit log: nothing on disk changes. Only for an item still in the vault.
    public func openOriginal(_ id: Int64, consent: Consent) throws -> (fd: Int32, item: VaultItem) {
        require(consent, for: .show)
        guard let item = try vault.store.item(id), item.status.isInVault, let path = vault.contentPath(of: item) else {
            throw Refusal.refused("item \(id) is not in the vault")
        }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw Refusal.refused("cannot open item \(id) in the vault: \(String(cString: strerror(errno)))") }
        do { try vault.store.record(.shown, itemId: id, mode: mode.mode, actor: actor) } catch {
            close(fd)
            throw error
        }
        return (fd, item)
    }

    /// Releases someone asked for, of items still in the vault.
    public func releaseRequests() throws -> [Int64: ReleaseRequest] { try vault.store.openReleaseRequests() }

    /// Deletes (or seals) item `id` and blocks its bytes, and with `origin` its site.
    public func block(_ id: Int64, keep: Bool, origin: Bool, consent: Consent) throws -> Vault.Block {
        require(consent, for: .block)
        return try vault.block(id: id, keep: keep, origin: origin, mode: mode.mode, actor: actor)
    }

    /// Items hidden more than `days` days ago.
    public func purgeCandidates(olderThanDays days: Int) throws -> [VaultItem] {
        try vault.purgeCandidates(before: clock().addingTimeInterval(-Double(days) * 86_400))
    }

    /// Deletes `items` for good, recording each; returns how many went.
    public func purge(_ items: [VaultItem], consent: Consent) throws -> Int {
        require(consent, for: .purge)
        return try vault.purge(items, actor: actor)
    }

    // MARK: - Mode

    /// Switches to `newMode`: writes it into `configuration` (the rest of the file kept as
    /// written) and records it, so that neither an edit of the file alone nor a file that
    /// cannot be read lowers it again (``ModeInForce``).
    public func changeMode(to newMode: AnalysisMode, in configuration: ConfigurationFile, consent: Consent) throws {
        require(consent, for: newMode == .child ? .enterChildMode : .leaveChildMode)
        try configuration.save(ConfigurationFile.setting("mode", to: ConfigurationFile.tomlString(newMode.rawValue), of: configuration.text))
        try vault.store.recordMode(newMode, from: mode.mode, actor: actor)
    }
}
