import ArgumentParser
import Foundation
import GuardianAPI
import QuarantineBackend
import QuarantineCore
import QuarantineStore

/// `--user NAME`: act on the account a guardian service protects, through its socket. Without
/// it, an account that is protected (its socket exists) always goes through its service.
struct TargetUser: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The protected account to act on (a guardian: root or a member of quarantine-guardians).", valueName: "user"))
    var user: String?

    /// The backend every command of this run goes through, chosen once: the guardian service
    /// protecting the account (with `--user`, or when this account is protected), else the
    /// person's own vault, whose configuration is at `configurationPath` (nil: the person's
    /// usual file). Exits 2 when `--user` names a service that is not there.
    func backend(configurationPath: String? = nil) throws -> any QuarantineBackend {
        if let chosen = Backends.chosen { return chosen }
        guard let name = user ?? GuardianClient.forCurrentUser() else {
            return LocalBackend(configurationPath: configurationPath, openVault: { readOnly in try openVault(readOnly: readOnly) })
        }
        do { return try SocketBackend(user: name) } catch {
            printError("quarantine: \(error)")
            throw ExitCode(2)
        }
    }
}

/// The backend a front end chose, when it chose one already (tests: a vault in a fresh folder,
/// or a guardian service served in process).
public enum Backends {
    @TaskLocal public static var chosen: (any QuarantineBackend)?
}

/// Sends `request` through `backend`; a refusal becomes the CLI's words and exit status (1
/// refused, 2 could not be done or the backend cannot be reached).
func serve<Request: GuardianRequest>(_ backend: any QuarantineBackend, _ request: Request) throws -> BackendReply<Request.Answer> {
    do { return try backend.send(request) } catch let error as BackendError {
        throw refusalExit(error)
    }
}

/// Says why `error` happened and gives the exit status: 1 refused (a wrong PIN, not allowed),
/// 2 could not be done or the backend cannot be reached.
func refusalExit(_ error: BackendError) -> ExitCode {
    switch error {
    case .refusal(.wrongPIN(let wait)):
        return Interventions.refused(wrongPIN: wait)
    case .refusal(.waitForPIN(let until)):
        return Interventions.refused(waitForPINUntil: until)
    case .refusal(.refused(let words)):
        printError("quarantine: \(words)")
        return ExitCode(1)
    case .refusal(.invalid(let problem)):
        printError("quarantine: \(problem)")
        return ExitCode(1)
    case .refusal(.failed(let words)), .unreachable(let words):
        printError("quarantine: \(words)")
        return ExitCode(2)
    }
}
