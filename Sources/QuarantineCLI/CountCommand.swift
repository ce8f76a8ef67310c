import ArgumentParser
import GuardianAPI
import QuarantineBackend

/// `quarantine count`: how many items the vault holds, and held, by state.
struct CountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "count",
        abstract: "Say how many items the vault holds, how many were asked back, and how many it held before, by state.",
        discussion: """
        Reads the database only (a panel applet may poll it).

        Examples:
          quarantine count
          quarantine count --json | jq .in_vault
          sudo quarantine count --user sam

        Exit status: 0 counted (also when the vault is empty), 2 the vault cannot be read.
        """)

    @Flag(name: .long, help: "Print one JSON object ({\"in_vault\": ..., \"asked_back\": ..., \"by_status\": {...}}).")
    var json = false

    @OptionGroup var target: TargetUser

    /// What `--json` prints.
    struct Counted: Encodable {
        var inVault: Int
        var askedBack: Int
        var byStatus: [String: Int]

        enum CodingKeys: String, CodingKey {
            case inVault = "in_vault", askedBack = "asked_back", byStatus = "by_status"
        }
    }

    func run() throws {
        let counts = try serve(try target.backend(), GuardianWire.Count()).answer
        if json {
            JSONOutput.print(Counted(inVault: counts.inVault, askedBack: counts.askedBack, byStatus: counts.byStatus))
            return
        }
        func count(_ status: String) -> Int { counts.byStatus[status] ?? 0 }
        printOut("\(counts.inVault) in the vault (\(count("quarantined")) hidden, \(count("sealed")) sealed); \(counts.askedBack) asked back")
        printOut("before: \(count("released")) released, \(count("blocked")) blocked, \(count("purged")) purged")
    }
}
