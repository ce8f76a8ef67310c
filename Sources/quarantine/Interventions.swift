import ArgumentParser
import Foundation
import GuardianAPI
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis

/// How the CLI speaks and asks, after Apple's simple (adult) and descriptive (child)
/// interventions. The core's ``GuardianRules`` decide what an action needs; this only asks.
/// Adult mode: one line, one question, `--yes` for scripts. Child mode: plain words, why it was
/// hidden, where to get help, "Are you sure?" twice, and the guardian PIN.
struct Interventions {
    /// The core's review use cases, in the mode in force.
    let review: Review
    var mode: ModeInForce { review.mode }

    static let help = "If someone sent you pictures like this, or asked you for some, tell a grown-up you trust. You can also talk to a child helpline: childhelplineinternational.org lists the one for your country."

    /// The mode in force (see ``ModeInForce``: never lowered by a configuration that cannot be read).
    static func currentMode(store: AuditStore?) -> ModeInForce {
        ModeInForce.current(store: store)
    }

    init(vault: Vault) {
        review = Review.current(vault: vault)
    }

    /// Asks what `action` needs (``Review/approval(for:)``) and returns the core's consent, or
    /// throws an exit code when the answer is no. `adultQuestion` is the adult's one question
    /// ("Release card.jpg (open_nsfw 0.91)?"); `childAction` ends the child's ("bring it back").
    @discardableResult
    func approve(_ action: ProtectedAction, adultQuestion: String, childAction: String, yes: Bool, request: Int64? = nil) throws -> Review.Consent {
        if let note = mode.note { printError("quarantine: \(note)") }
        switch review.approval(for: action) {
        case .none:
            return try review.consent(to: action, confirmed: true, pin: nil)
        case .confirmation:
            guard yes || confirm(adultQuestion) else {
                printError("quarantine: nothing changed (confirm on a terminal, or pass --yes)")
                throw ExitCode(1)
            }
            return try review.consent(to: action, confirmed: true, pin: nil)
        case .refused(let reason):
            if yes && mode.mode == .child { try refuseYes() }
            printError(reason)
            throw ExitCode(1)
        case .guardianPIN(let askTwice):
            if yes { try refuseYes() }
            guard isTerminal(0) else {
                printError("quarantine: in child mode this needs a grown-up at the keyboard.")
                throw ExitCode(1)
            }
            if askTwice { try Self.areYouSure(childAction: childAction) }
            do {
                guard let request else { return try review.consent(to: action, confirmed: true, pin: readSecret("Guardian PIN: ")) }
                let pin = readSecret("Guardian PIN (or just press Enter to ask a grown-up later): ")
                if pin?.isEmpty ?? true {
                    try askGuardian(for: request)
                    throw ExitCode(1)
                }
                return try review.consent(to: action, confirmed: true, pin: pin)
            } catch Review.Refusal.wrongPIN(let wait) {
                throw Self.refused(wrongPIN: wait)
            } catch Review.Refusal.waitForPIN(let until) {
                throw Self.refused(waitForPINUntil: until)
            }
        }
    }

    /// Says that the guardian PIN was wrong (and how long the next try waits); exit status 1.
    static func refused(wrongPIN wait: TimeInterval) -> ExitCode {
        printOut("That PIN is not right. Nothing was changed." + (wait > 0 ? " The next try must wait \(GuardianPIN.describe(wait))." : ""))
        return ExitCode(1)
    }

    /// Says that no PIN is checked until `until` (too many wrong ones); exit status 1.
    static func refused(waitForPINUntil until: Date) -> ExitCode {
        printOut("Too many wrong PINs. Try again in \(GuardianPIN.describe(until.timeIntervalSinceNow)). Nothing was changed.")
        return ExitCode(1)
    }

    /// The child's two screens: why it was hidden and where to get help, then "are you sure?"
    /// twice. Throws exit 1 at a no.
    static func areYouSure(childAction: String) throws {
        printOut("This picture was hidden because it may show private parts of the body.")
        printOut("Hiding it keeps you safe. You did nothing wrong.")
        printOut(Self.help)
        printOut("")
        guard confirm("Do you want to \(childAction)? You need a grown-up for this.") else {
            printOut("OK. It stays hidden.")
            throw ExitCode(1)
        }
        printOut("")
        guard confirm("Are you sure? A grown-up must now type the guardian PIN.") else {
            printOut("OK. It stays hidden.")
            throw ExitCode(1)
        }
    }

    /// Records the child's request for item `id` (``Review/requestRelease(_:)``) and says what
    /// happens next.
    func askGuardian(for id: Int64) throws {
        do {
            try review.requestRelease(id)
        } catch let refusal as Review.Refusal {
            printError("quarantine: \(refusal)")
            throw ExitCode(2)
        }
        printOut("Your question is saved. A grown-up will see it in 'quarantine list' and can look at the picture with you.")
    }

    private func refuseYes() throws -> Never {
        printError("quarantine: --yes works only in adult mode; in child mode a grown-up must type the guardian PIN.")
        throw ExitCode(2)
    }
}

/// Reads a line from the terminal without echoing it.
func readSecret(_ prompt: String) -> String? {
    // Echo goes off before the prompt appears, so even an instant answer is never shown.
    var saved = termios()
    let terminal = isTerminal(0) && tcgetattr(0, &saved) == 0
    if terminal {
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(0, TCSAFLUSH, &quiet)
    }
    FileHandle.standardError.write(Data(prompt.utf8))
    defer {
        if terminal {
            tcsetattr(0, TCSANOW, &saved)
            FileHandle.standardError.write(Data("\n".utf8))
        }
    }
    return readLine(strippingNewline: true)
}

/// `quarantine guardian set-pin`.
struct Guardian: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The guardian: the PIN child mode asks for, and the system service that protects a child's account.",
        discussion: """
        Examples:
          quarantine guardian set-pin
          sudo quarantine guardian enable --user sam
          quarantine guardian status

        Exit status: that of the subcommand (see each one's --help).
        """,
        subcommands: [SetPIN.self, Enable.self, Disable.self, Status.self, Serve.self])

    struct SetPIN: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-pin",
            abstract: "Set or change the guardian PIN (4 to 12 digits; only a slow salted hash is kept).",
            discussion: """
            Examples:
              quarantine guardian set-pin
              quarantine guardian set-pin --pin-stdin < pin.txt   # the PIN twice, a line each

            Exit status: 0 set, 1 refused (the current PIN was wrong, or cancelled), 2 not a valid PIN or it could not be stored.
            """)

        @Flag(name: .long, help: "Read the PINs from standard input, one a line (current PIN first when changing it).")
        var pinStdin = false

        @OptionGroup var target: TargetUser

        func run() throws {
            if let client = try target.client() {
                func ask(_ prompt: String) -> String? { pinStdin ? readLine(strippingNewline: true) : readSecret(prompt) }
                guard let pin = ask("New guardian PIN (4 to 12 digits): "), GuardianPIN.isValid(pin), ask("The same PIN again: ") == pin else {
                    printError("quarantine: a PIN is 4 to 12 digits, typed the same twice; nothing changed")
                    throw ExitCode(2)
                }
                _ = try quarantine.ask(client, GuardianWire.SetPIN(pin: pin))
                printOut("The guardian PIN of \(client.paths.user) is set.")
                return
            }
            let vault = try openVault()
            let guardian = GuardianPIN(store: vault.store)
            func ask(_ prompt: String) -> String? { pinStdin ? readLine(strippingNewline: true) : readSecret(prompt) }
            if !pinStdin && !isTerminal(0) {
                printError("quarantine: type the PIN on a terminal, or use --pin-stdin")
                throw ExitCode(2)
            }
            if guardian.isSet {
                guard let current = ask("Current guardian PIN: ") else { throw ExitCode(1) }
                switch try guardian.check(current) {
                case .accepted: break
                case .wrong(_, let wait):
                    printError("quarantine: that is not the current PIN; nothing changed" + (wait > 0 ? " (the next try must wait \(GuardianPIN.describe(wait)))" : ""))
                    throw ExitCode(1)
                case .locked(let until):
                    printError("quarantine: too many wrong PINs; try again in \(GuardianPIN.describe(until.timeIntervalSinceNow)); nothing changed")
                    throw ExitCode(1)
                }
            }
            guard let pin = ask("New guardian PIN (4 to 12 digits): "), GuardianPIN.isValid(pin) else {
                printError("quarantine: a PIN is 4 to 12 digits; nothing changed")
                throw ExitCode(2)
            }
            guard ask("The same PIN again: ") == pin else {
                printError("quarantine: the two PINs differ; nothing changed")
                throw ExitCode(1)
            }
            try guardian.set(pin)
            try vault.store.record(.guardian, mode: Interventions.currentMode(store: vault.store).mode, actor: "cli", detail: "guardian PIN set")
            printOut("The guardian PIN is set.")
        }
    }
}

/// `quarantine mode [adult|child]`: shows or changes the mode in the user's configuration.
struct ModeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mode",
        abstract: "Show or change the mode: adult or child. Entering child mode needs a guardian PIN set; leaving it needs that PIN.",
        discussion: """
        Examples:
          quarantine mode
          quarantine mode --json
          quarantine mode child
          quarantine mode adult   # asks for the guardian PIN

        Exit status: 0 shown or changed, 1 refused (the guardian PIN was wrong, or cancelled), 2 could not be changed (the message says why).
        """)

    @Argument(help: "adult or child; without it, the mode in force is shown.")
    var mode: AnalysisMode?

    @Flag(name: .long, help: "Showing the mode: print one JSON object ({\"mode\": ..., \"note\": why, when it is not the configuration's}).")
    var json = false

    @OptionGroup var target: TargetUser

    func validate() throws {
        if json && mode != nil { throw ValidationError("--json shows the mode; it does not go with a new mode") }
    }

    func run() throws {
        if let client = try target.client() {
            // Every answer says the mode in force: `hello` shows it, `mode` changes it.
            let shown: AnalysisMode?
            if let mode { shown = try ask(client, GuardianWire.Mode(mode: mode)).header.mode } else { shown = try ask(client, GuardianWire.Hello()).header.mode }
            if mode == nil && json {
                printJSONObject(["mode": shown?.rawValue, "user": client.paths.user].compactMapValues { $0 })
                return
            }
            printOut(mode == nil ? (shown?.rawValue ?? "?") : "\(client.paths.user) is now in \((shown ?? .child).rawValue) mode.")
            return
        }
        // Showing the mode changes nothing: read only (a panel applet may poll it).
        let vault = try openVault(readOnly: mode == nil)
        let inForce = Interventions.currentMode(store: vault.store)
        let current = inForce.mode
        guard let mode else {
            if json {
                printJSONObject(["mode": current.rawValue, "note": inForce.note].compactMapValues { $0 })
                return
            }
            printOut(current.rawValue)
            if let note = inForce.note { printError("quarantine: \(note)") }
            return
        }
        if mode == current {
            printOut("Already in \(mode.rawValue) mode.")
            return
        }
        let interventions = Interventions(vault: vault)
        let consent: Review.Consent
        do {
            consent = try interventions.approve(mode == .child ? .enterChildMode : .leaveChildMode, adultQuestion: "", childAction: "", yes: false)
        } catch let exit as ExitCode where current == .child && exit == ExitCode(1) {
            printOut("Still in child mode.")
            throw exit
        }
        let file: ConfigurationFile
        do { file = try ConfigurationFile.load() } catch {
            printError("quarantine: \(error); fix it (or remove it) and try again")
            throw ExitCode(2)
        }
        try interventions.review.changeMode(to: mode, in: file, consent: consent)
        printOut("Now in \(mode.rawValue) mode. " + tellAgentToReload())
    }
}
