import SensitivityAnalysis

/// Something a person asks for that changes what is protected.
public enum ProtectedAction: Sendable, Equatable, CaseIterable {
    /// Put a hidden file back.
    case release
    /// Delete a hidden file (or seal it) and block its bytes.
    case block
    /// Delete old items of the vault for good.
    case purge
    /// Stop watching a folder.
    case removeWatchedFolder
    /// Exclude more from watching.
    case changeExclusions
    /// Make the models' thresholds less strict.
    case changeThresholds
    /// Switch from child to adult mode.
    case leaveChildMode
    /// Switch from adult to child mode.
    case enterChildMode
    /// See a hidden file as it is (the review page's Show): nothing changes on disk, but the
    /// person sees what was hidden from them.
    case show
}

/// What must happen before an action goes ahead.
public enum Approval: Sendable, Equatable {
    /// Nothing: the action weakens nothing.
    case none
    /// Adult mode: one question on a terminal, or `--yes`.
    case confirmation
    /// Child mode: explained in plain words, "are you sure?" asked twice when `askTwice`, then the
    /// guardian PIN typed on a terminal. `--yes` is refused.
    case guardianPIN(askTwice: Bool)
    /// Not possible now, and why.
    case refused(String)
}

/// The one rule for who may weaken protection: every CLI verb asks it, none decides for itself.
public enum GuardianRules {
    public static func approval(for action: ProtectedAction, in mode: AnalysisMode, pinIsSet: Bool) -> Approval {
        switch (mode, action) {
        case (_, .enterChildMode):
            return pinIsSet || mode == .child ? .none
                : .refused("set a guardian PIN first ('quarantine guardian set-pin'), so that only a guardian can leave child mode.")
        case (.adult, .release), (.adult, .block), (.adult, .purge):
            return .confirmation
        case (.adult, _):
            return .none
        case (.child, _):
            guard pinIsSet else { return .refused("A guardian must first set a PIN with 'quarantine guardian set-pin'. Nothing was changed.") }
            return .guardianPIN(askTwice: action == .release || action == .block || action == .show)
        }
    }
}

// MARK: - Who may ask a guardian service for what

/// Who asks a guardian service, as the kernel names them (SO_PEERCRED on its socket).
public enum GuardianCaller: Sendable, Equatable, CaseIterable {
    /// The protected account itself.
    case protectedAccount
    /// Root, or a member of `quarantine-guardians`, from their own account.
    case guardian
}

/// Who a use case of the guardian service is for: each of its verbs declares one (the route
/// table), and ``GuardianRules/access(_:for:protectedAccount:)`` decides.
public enum GuardianAccess: Sendable, Equatable, CaseIterable {
    /// The protected account and its guardians.
    case anyone
    /// The protected account only (asking a guardian for an item back).
    case protectedAccount
    /// Guardians only (the history, the mode, the folders watched, the PIN).
    case guardian
}

extension GuardianRules {
    /// Whether `caller` may use a verb declared with `access`: `.none`, or `.refused` with the
    /// words the caller sees. `account` names the protected account.
    public static func access(_ access: GuardianAccess, for caller: GuardianCaller, protectedAccount account: String) -> Approval {
        switch (access, caller) {
        case (.anyone, _), (.protectedAccount, .protectedAccount), (.guardian, .guardian):
            return .none
        case (.protectedAccount, .guardian):
            return .refused("only \(account) can do this")
        case (.guardian, .protectedAccount):
            return .refused("only a guardian can do this (root, or a member of quarantine-guardians); ask a grown-up")
        }
    }

    /// What `action` needs when `caller` asks the guardian service for it: a guardian, whom the
    /// kernel identified, needs nothing more; the protected account, what ``approval(for:in:pinIsSet:)``
    /// says (in child mode the guardian PIN, given with the request: no terminal question can be
    /// asked through the socket, so a confirmation counts as given by the request itself).
    public static func approval(for action: ProtectedAction, in mode: AnalysisMode, pinIsSet: Bool, caller: GuardianCaller) -> Approval {
        caller == .guardian ? .none : approval(for: action, in: mode, pinIsSet: pinIsSet)
    }
}
