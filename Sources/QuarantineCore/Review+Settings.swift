import Foundation
import QuarantineStore
import SensitivityAnalysis

// MARK: - Folders, the PIN, counts: the rules every front end goes through

extension Review {
    /// Watches `path` (absolute, `~/...`, or relative to the home of `environment`): it must be a
    /// folder, must not hold the vault, and with `within` (a guardian service: the protected
    /// account's home) must lie inside it. Adding weakens nothing, so it needs no consent.
    /// Returns the folder, absolute, and whether the configuration changed (false: watched already).
    public func addWatchedFolder(_ path: String, outgoing: Bool, in configuration: ConfigurationFile, environment: [String: String],
                                 within home: (path: String, account: String)? = nil) throws -> (folder: String, changed: Bool) {
        let absolute = Self.watchedPath(path, environment: environment, relativeToHome: home != nil)
        if let home, absolute != home.path, !absolute.hasPrefix(home.path + "/") {
            throw Refusal.refused("\(absolute) is outside \(home.account)'s home (\(home.path)); the service watches folders there only")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw Refusal.refused("\(absolute) is not a folder")
        }
        let vaultBase = (vault.root as NSString).deletingLastPathComponent
        if absolute == vaultBase || absolute.hasPrefix(vaultBase + "/") || absolute == "/" {
            throw Refusal.refused("\(absolute) holds the vault itself; it cannot be watched")
        }
        return try configuration.editWatch(.add(absolute, outgoing: outgoing), environment: environment)
    }

    /// Stops watching `path` (nothing in it is touched): weakens protection, so it takes a
    /// ``Consent`` to ``ProtectedAction/removeWatchedFolder``. Refused when it is not watched.
    public func removeWatchedFolder(_ path: String, in configuration: ConfigurationFile, environment: [String: String], relativeToHome: Bool = false,
                                    consent: Consent) throws -> String {
        require(consent, for: .removeWatchedFolder)
        do {
            return try configuration.editWatch(.remove(Self.watchedPath(path, environment: environment, relativeToHome: relativeToHome)), environment: environment).folder
        } catch let refusal as ConfigurationFile.WatchRefusal {
            throw Refusal.refused(refusal.description)
        }
    }

    /// `path` made absolute; with `relativeToHome`, a relative path is taken from the home
    /// (a guardian service has no working folder of the person's).
    static func watchedPath(_ path: String, environment: [String: String], relativeToHome: Bool) -> String {
        let named = relativeToHome && !path.hasPrefix("/") && !path.hasPrefix("~") ? "~/" + path : path
        return WatchSettings.expand(named, environment: environment)
    }

    /// Sets the guardian PIN to `pin` (nil: only checks `current`). A guardian the kernel
    /// identified needs nothing more; anyone else changing a PIN that is set must give the
    /// `current` one (checked with its waits, as every PIN is).
    public func setPIN(_ pin: String?, current: String?, by caller: GuardianCaller) throws {
        if let pin, !GuardianPIN.isValid(pin) { throw Refusal.refused("a PIN is 4 to 12 digits; nothing changed") }
        if guardian.isSet && caller != .guardian {
            switch try guardian.check(current ?? "", actor: actor, now: clock()) {
            case .accepted: break
            case .wrong(_, let wait): throw Refusal.wrongPIN(wait: wait)
            case .locked(let until): throw Refusal.waitForPIN(until: until)
            }
        }
        guard let pin else { return }
        try guardian.set(pin)
        try vault.store.record(.guardian, mode: mode.mode, actor: actor, detail: "guardian PIN set")
    }

    /// How many items the vault holds and held, by state, and how many were asked back.
    public func counts() throws -> (byStatus: [String: Int], inVault: Int, askedBack: Int) {
        let byStatus = try vault.store.itemCounts()
        let inVault = VaultItem.Status.allCases.filter(\.isInVault).reduce(0) { $0 + (byStatus[$1] ?? 0) }
        return (Dictionary(uniqueKeysWithValues: byStatus.map { ($0.key.rawValue, $0.value) }), inVault, try releaseRequests().count)
    }
}
