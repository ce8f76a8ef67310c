import ArgumentParser
import Foundation
import GuardianAPI
import QuarantineBackend
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis

/// How the CLI speaks and asks, after Apple's simple (adult) and descriptive (child)
/// interventions. The core's ``GuardianRules`` decide what an action needs (the backend's
/// session says the caller, the mode and whether a PIN is set); this only asks.
/// Adult mode: one line, one question, `--yes` for scripts. Child mode: plain words, why it was
/// hidden, where to get help, "Are you sure?" twice, and the guardian PIN.
enum Interventions {
    static let help = "If someone sent you pictures like this, or asked you for some, tell a grown-up you trust. You can also talk to a child helpline: childhelplineinternational.org lists the one for your country."

    /// Asks what `action` needs (``BackendReply/approval(for:)``) and returns the guardian PIN
    /// to send with the request (nil when none is needed), or throws an exit code when the
    /// answer is no. `adultQuestion` is the adult's one question ("Release card.jpg
    /// (open_nsfw 0.91)?"); `childAction` ends the child's ("bring it back"). With `askInstead`,
    /// Enter alone at the PIN prompt asks a guardian instead (and exits 1).
    /// A verb the caller may not use at all is not asked about: the backend refuses it in words.
    static func approve(_ action: ProtectedAction, verb: GuardianVerb, session: BackendReply<GuardianWire.Hello.Answer>, adultQuestion: String, childAction: String,
                        yes: Bool, askInstead: (() throws -> Void)? = nil) throws -> String? {
        guard session.answer.verbs.contains(verb) else { return nil }
        if let note = session.answer.modeNote { printError("quarantine: \(note)") }
        switch session.approval(for: action) {
        case .none:
            return nil
        case .confirmation:
            guard yes || confirm(adultQuestion) else {
                printError("quarantine: nothing changed (confirm on a terminal, or pass --yes)")
                throw ExitCode(1)
            }
            return nil
        case .refused(let reason):
            if yes && session.mode == .child { try refuseYes() }
            printError(reason)
            throw ExitCode(1)
        case .guardianPIN(let askTwice):
            if yes { try refuseYes() }
            guard Console.current.interactive else {
                printError("quarantine: in child mode this needs a grown-up at the keyboard.")
                throw ExitCode(1)
            }
            if askTwice { try areYouSure(childAction: childAction) }
            guard let askInstead else { return readSecret("Guardian PIN: ") ?? "" }
            let pin = readSecret("Guardian PIN (or just press Enter to ask a grown-up later): ") ?? ""
            if pin.isEmpty {
                try askInstead()
                throw ExitCode(1)
            }
            return pin
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

    private static func refuseYes() throws -> Never {
        printError("quarantine: --yes works only in adult mode; in child mode a grown-up must type the guardian PIN.")
        throw ExitCode(2)
    }
}

/// `quarantine guardian set-pin`.
struct Guardian: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "guardian",
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
            let backend = try target.backend()
            let session = try serve(backend, GuardianWire.Hello())
            func ask(_ prompt: String) -> String? { pinStdin ? Console.current.readLine() : readSecret(prompt) }
            if !pinStdin && !Console.current.interactive {
                printError("quarantine: type the PIN on a terminal, or use --pin-stdin")
                throw ExitCode(2)
            }
            // Changing a PIN that is set takes the current one, unless a guardian the service
            // identified asks: the core checks it at once, and again with the new one.
            var current: String?
            if session.pinIsSet && session.caller != .guardian && session.answer.verbs.contains(.setPIN) {
                guard let typed = ask("Current guardian PIN: ") else { throw ExitCode(1) }
                current = typed
                try Self.send(backend, GuardianWire.SetPIN(pin: nil, current: typed))
            }
            guard let pin = ask("New guardian PIN (4 to 12 digits): "), GuardianPIN.isValid(pin) else {
                printError("quarantine: a PIN is 4 to 12 digits; nothing changed")
                throw ExitCode(2)
            }
            guard ask("The same PIN again: ") == pin else {
                printError("quarantine: the two PINs differ; nothing changed")
                throw ExitCode(1)
            }
            try Self.send(backend, GuardianWire.SetPIN(pin: pin, current: current))
            printOut(backend.isRemote ? "The guardian PIN of \(backend.account) is set." : "The guardian PIN is set.")
        }

        /// Sends `request`; a wrong current PIN is said as such.
        static func send(_ backend: any QuarantineBackend, _ request: GuardianWire.SetPIN) throws {
            do { _ = try backend.send(request) } catch BackendError.refusal(.wrongPIN(let wait)) {
                printError("quarantine: that is not the current PIN; nothing changed" + (wait > 0 ? " (the next try must wait \(GuardianPIN.describe(wait)))" : ""))
                throw ExitCode(1)
            } catch BackendError.refusal(.waitForPIN(let until)) {
                printError("quarantine: too many wrong PINs; try again in \(GuardianPIN.describe(until.timeIntervalSinceNow)); nothing changed")
                throw ExitCode(1)
            } catch let error as BackendError {
                throw refusalExit(error)
            }
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
        let backend = try target.backend()
        // Every answer says the mode in force: `hello` shows it, `mode` changes it.
        let session = try serve(backend, GuardianWire.Hello())
        let current = session.mode
        guard let mode else {
            if json {
                JSONOutput.print(ReviewJSON.Mode(mode: current, note: session.answer.modeNote, user: backend.isRemote ? backend.account : nil))
                return
            }
            printOut(current.rawValue)
            if let note = session.answer.modeNote { printError("quarantine: \(note)") }
            return
        }
        if mode == current {
            printOut("Already in \(mode.rawValue) mode.")
            return
        }
        let pin: String?
        do {
            pin = try Interventions.approve(mode == .child ? .enterChildMode : .leaveChildMode, verb: .mode, session: session, adultQuestion: "", childAction: "", yes: false)
        } catch let exit as ExitCode where current == .child && exit == ExitCode(1) {
            printOut("Still in child mode.")
            throw exit
        }
        let changed: BackendReply<GuardianWire.Mode.Answer>
        do { changed = try serve(backend, GuardianWire.Mode(mode: mode, pin: pin)) } catch let exit as ExitCode where current == .child && exit == ExitCode(1) {
            printOut("Still in child mode.")
            throw exit
        }
        if backend.isRemote {
            printOut("\(backend.account) is now in \(changed.mode.rawValue) mode.")
        } else {
            printOut("Now in \(mode.rawValue) mode." + (changed.answer.reloaded.map { " " + $0 } ?? ""))
        }
    }
}
