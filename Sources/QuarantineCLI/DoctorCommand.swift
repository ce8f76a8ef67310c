import ArgumentParser
import Foundation
import QuarantineCore
import QuarantineStore
import MediaDecoding
import SensitivityAnalysis
import ServiceSupport
import GuardianService

/// `quarantine doctor`: checks the installation and says where everything lives.
struct Doctor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check the installation: runtime, models (sha256), decoders, inotify limits, file locations.",
        discussion: """
        Also checks the audit database (writable, not locked by another process, every page sound) and \
        that every file in the vault is listed in it; with --repair, a damaged database is moved aside \
        (kept, never deleted) and a new one made, and files whose item was lost (the database deleted, \
        replaced or damaged) are listed again from the meta.json kept beside each one.

        Exit status: 0 everything needed works, 1 something is missing (each line says how to fix it).

        Examples:
          quarantine doctor
          quarantine doctor --json | jq '.checks[] | select(.ok == false)'
          quarantine doctor --repair
        """
    )

    @Flag(name: .long, help: "Print one JSON object instead of text.")
    var json = false

    @Flag(name: .long, help: "Move a damaged audit database aside, and list again the vault's files that the database lost, from their meta.json.")
    var repair = false

    struct Check: Encodable {
        var name: String
        var ok: Bool
        var detail: String
    }

    func run() async throws {
        var checks: [Check] = []
        let catalog = ModelCatalog.standard()
        var runtimePath: String?
        for artifact in ModelCatalog.all {
            do {
                // Hashed in full whatever the folder's record says: the one explicit check.
                let path = try catalog.verified(artifact, trustingRecord: false)
                if artifact.isRuntime { runtimePath = path }
                checks.append(Check(name: artifact.fileName, ok: true, detail: "\(path) (sha256 verified; \(artifact.source); licence \(artifact.licence))"))
            } catch {
                checks.append(Check(name: artifact.fileName, ok: false, detail: error.description))
            }
        }
        if let runtimePath {
            do {
                let runtime = try OnnxRuntime(path: runtimePath)
                checks.append(Check(name: "onnxruntime", ok: true, detail: "loads; version \(runtime.version)"))
                for model in SensitivityModels.all {
                    guard let path = catalog.locate(model.artifact) else { continue }
                    let label = "\(model.displayName) session"
                    do {
                        let s = try InferenceSession(runtime: runtime, modelPath: path, intraOpThreads: 1, optimizedCopy: false)
                        checks.append(Check(name: label, ok: true, detail: "input \(s.inputName) \(s.inputShape), output \(s.outputName) \(s.outputShape)"))
                    } catch {
                        checks.append(Check(name: label, ok: false, detail: error.description))
                    }
                }
            } catch {
                checks.append(Check(name: "onnxruntime", ok: false, detail: error.description))
            }
        }
        for entry in DecoderInventory.check() {
            checks.append(Check(name: "decoder \(entry.name)", ok: entry.available || !entry.expected, detail: entry.detail))
        }
        checks += VirtualCamera.doctorLines().map { Check(name: $0.name, ok: $0.ok, detail: $0.detail) }
        // Informational: without Landlock the worker still runs (seccomp, no capabilities), but
        // could still open files its user may read.
        checks.append(Check(name: "landlock", ok: true, detail: AnalysisSandbox.landlockABI.map {
            "ABI \($0): the analysis worker gives up all file-system access (but reading the system's fonts) once its models are loaded"
        } ?? "not available in this kernel (or disabled at boot): the analysis worker keeps its user's read access to files"))
        for limit in ["max_user_watches", "max_user_instances", "max_queued_events"] {
            let path = "/proc/sys/fs/inotify/\(limit)"
            let value = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            checks.append(Check(name: "inotify \(limit)", ok: value != nil, detail: value.map { "\($0) (\(path))" } ?? "cannot read \(path)"))
        }
        // What a protected account could do around a guardian service (issue 26): informational.
        checks.append(Check(name: "user namespaces", ok: true, detail: UserNamespaces.current().guardianWords))
        // pam_quarantine for each protected account: a listed account whose filter is not in force
        // (the module or its PAM line gone, the list unreadable) is a fault; an account never listed
        // is said, informational.
        let sessionFilter = SessionMountFilter()
        let listed = (try? sessionFilter.protectedUIDs()) ?? []
        for name in GuardianSetup.protectedAccounts() {
            guard let entry = getpwnam(name) else { continue }
            let report = sessionFilter.report(user: name, uid: entry.pointee.pw_uid)
            let expected = listed.contains(entry.pointee.pw_uid) || report.listProblem != nil
            checks.append(Check(name: "private mounts \(name)", ok: report.inForce || !expected, detail: report.words))
        }
        let config = Settings.userConfigurationPath()
        var configDetail = config
        var configOK = true
        do {
            let file = try ConfigurationFile.load(config)
            configDetail += file.exists ? "; mode \(file.settings.mode.rawValue)" : " (absent: built-in defaults in force)"
        } catch {
            configOK = false
            configDetail = "\(error)"
        }
        checks.append(Check(name: "config", ok: configOK, detail: configDetail))
        // Where browser downloads' origins are looked up (informational: none found is fine).
        let settings = (try? ConfigurationFile.load(config).settings) ?? Settings()
        if settings.agent.browserHistory {
            let profiles = settings.browserHistory().profiles()
            checks.append(Check(name: "browser history", ok: true, detail: profiles.isEmpty
                ? "no browser profile found: downloads' origins come only from user.xdg.origin.url (wget, curl --xattr)"
                : "origins of downloads read from " + profiles.map { "\($0.browser) (\($0.folder))" }.joined(separator: ", ")))
        } else {
            checks.append(Check(name: "browser history", ok: true, detail: "not read (agent.browser_history = false)"))
        }
        checks += Self.databaseChecks(path: Vault.baseDirectory() + "/audit.sqlite3", repair: repair)
        do {
            let vault = try Vault.standard()
            if repair {
                for line in try vault.repair(actor: "doctor") { checks.append(Check(name: "repaired", ok: true, detail: line)) }
            }
            let orphans = try vault.orphans()
            checks.append(Check(name: "vault", ok: orphans.isEmpty, detail: orphans.isEmpty
                ? "every file in \(vault.root) is listed in \(vault.store.path)"
                : "\(orphans.count) file(s) in \(vault.root) are not in the audit database (\(orphans.prefix(3).joined(separator: ", "))): run 'quarantine doctor --repair'"))
        } catch {
            checks.append(Check(name: "vault", ok: false, detail: "cannot open the vault or its database: \(error)"))
        }
        checks.append(Check(name: "runtime search path", ok: true, detail: catalog.runtimeDirectories.joined(separator: ", ")))
        checks.append(Check(name: "model search path", ok: true, detail: catalog.modelDirectories.joined(separator: ", ")))

        let healthy = checks.allSatisfy(\.ok)
        if json {
            struct Report: Encodable { var ok: Bool; var version: String; var checks: [Check] }
            JSONOutput.print(Report(ok: healthy, version: Quarantine.version, checks: checks))
        } else {
            for check in checks {
                print("\(check.ok ? "ok     " : "MISSING") \(check.name): \(check.detail)")
            }
            print(healthy ? "Everything quarantine needs is in place." : "Something is missing: see the MISSING lines above.")
        }
        if !healthy { throw ExitCode(1) }
    }
}
