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
            return .guardianPIN(askTwice: action == .release || action == .block)
        }
    }
}
