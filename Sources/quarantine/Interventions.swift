import ArgumentParser
import Foundation
import QuarantineStore
import SensitivityAnalysis

/// How the CLI speaks and asks, after Apple's simple (adult) and descriptive (child)
/// interventions. Adult mode: one line, one question, `--yes` for scripts. Child mode: plain
/// words, why it was hidden, where to get help, "Are you sure?" twice, and the guardian PIN.
struct Interventions {
    let mode: AnalysisMode
    let guardian: GuardianPIN

    static let help = "If someone sent you pictures like this, or asked you for some, tell a grown-up you trust. You can also talk to a child helpline: childhelplineinternational.org lists the one for your country."

    /// The mode in force, from the user's configuration.
    static func currentMode() -> AnalysisMode {
        let path = Settings.userConfigurationPath()
        guard let text = try? readTextFile(path, required: false), let settings = try? Settings().applying(toml: text, from: path) else { return .adult }
        return settings.mode
    }

    /// Asks before `action`; in child mode explains first, asks twice and checks the PIN.
    /// Throws an exit code when the answer is no.
    /// `adultVerb` starts the adult question ("Release"); `childAction` ends the child's ("bring it back").
    func approve(adultVerb: String, childAction: String, item: VaultItem, yes: Bool) throws {
        switch mode {
        case .adult:
            if yes { return }
            if !confirm("\(adultVerb) \(URL(fileURLWithPath: item.originalPath).lastPathComponent) (\(item.reasonList.first ?? "flagged"))?") {
                printError("quarantine: nothing changed (confirm on a terminal, or pass --yes)")
                throw ExitCode(1)
            }
        case .child:
            if yes {
                printError("quarantine: --yes works only in adult mode; in child mode a grown-up must type the guardian PIN.")
                throw ExitCode(2)
            }
            guard isTerminal(0) else {
                printError("quarantine: in child mode this needs a grown-up at the keyboard.")
                throw ExitCode(1)
            }
            guard guardian.isSet else {
                printError("A guardian must first set a PIN with 'quarantine guardian set-pin'. Nothing was changed.")
                throw ExitCode(1)
            }
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
            guard let pin = readSecret("Guardian PIN: "), try guardian.verify(pin) else {
                printOut("That PIN is not right. Nothing was changed.")
                throw ExitCode(1)
            }
        }
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
        abstract: "The guardian's PIN, which child mode asks for before anything hidden comes back.",
        subcommands: [SetPIN.self])

    struct SetPIN: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-pin",
            abstract: "Set or change the guardian PIN (4 to 12 digits; only a slow salted hash is kept).")

        @Flag(name: .long, help: "Read the PINs from standard input, one a line (current PIN first when changing it).")
        var pinStdin = false

        func run() throws {
            let vault = try openVault()
            let guardian = GuardianPIN(store: vault.store)
            func ask(_ prompt: String) -> String? { pinStdin ? readLine(strippingNewline: true) : readSecret(prompt) }
            if !pinStdin && !isTerminal(0) {
                printError("quarantine: type the PIN on a terminal, or use --pin-stdin")
                throw ExitCode(2)
            }
            if guardian.isSet {
                guard let current = ask("Current guardian PIN: "), try guardian.verify(current) else {
                    printError("quarantine: that is not the current PIN; nothing changed")
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
            try vault.store.record(.guardian, mode: Interventions.currentMode().rawValue, actor: "cli", detail: "guardian PIN set")
            printOut("The guardian PIN is set.")
        }
    }
}

/// `quarantine mode [adult|child]`: shows or changes the mode in the user's configuration.
struct ModeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mode",
        abstract: "Show or change the mode: adult or child. Entering child mode needs a guardian PIN set; leaving it needs that PIN.")

    @Argument(help: "adult or child; without it, the mode in force is shown.")
    var mode: AnalysisMode?

    func run() throws {
        let current = Interventions.currentMode()
        guard let mode else {
            printOut(current.rawValue)
            return
        }
        if mode == current {
            printOut("Already in \(mode.rawValue) mode.")
            return
        }
        let vault = try openVault()
        let guardian = GuardianPIN(store: vault.store)
        if mode == .child && !guardian.isSet {
            printError("quarantine: set a guardian PIN first ('quarantine guardian set-pin'), so that only a guardian can leave child mode.")
            throw ExitCode(1)
        }
        if current == .child {
            guard isTerminal(0) else {
                printError("quarantine: leaving child mode needs the guardian PIN, typed on a terminal.")
                throw ExitCode(1)
            }
            guard let pin = readSecret("Guardian PIN: "), try guardian.verify(pin) else {
                printOut("That PIN is not right. Still in child mode.")
                throw ExitCode(1)
            }
        }
        let path = Settings.userConfigurationPath()
        let text = (try readTextFile(path, required: false)) ?? ""
        let updated = Self.setting(mode: mode, in: text)
        _ = try Settings().applying(toml: updated, from: path) // never write a file that does not parse
        try FileManager.default.createDirectory(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path, withIntermediateDirectories: true)
        try Data(updated.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        try vault.store.record(.modeChanged, mode: mode.rawValue, actor: current == .child ? "guardian" : "cli", detail: "\(current.rawValue) -> \(mode.rawValue)")
        printOut("Now in \(mode.rawValue) mode. " + tellAgentToReload())
    }

    /// The configuration text with its top-level `mode` set, everything else kept as written.
    static func setting(mode: AnalysisMode, in text: String) -> String {
        var lines = text.components(separatedBy: "\n")
        let firstTable = lines.firstIndex { $0.trimmingCharacters(in: .whitespaces).hasPrefix("[") } ?? lines.count
        let line = "mode = \"\(mode.rawValue)\""
        if let index = lines[0..<firstTable].firstIndex(where: { $0.range(of: #"^\s*mode\s*="#, options: .regularExpression) != nil }) {
            lines[index] = line
        } else {
            lines.insert(line, at: 0)
        }
        return lines.joined(separator: "\n")
    }
}
