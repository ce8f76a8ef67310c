import Foundation
import Testing

/// Every verb of the command line, found by walking `--help` (issue 17): each has an example and
/// its exit status in its help, every example names options the verb has, the verbs whose output
/// is data have `--json` and it prints JSON, the documented exit statuses are the real ones, and
/// the progress bar's escape sequences reach only a terminal, never with NO_COLOR set.
/// The help screens are made in process (``InProcessCLI/help(_:)``: the same parse of the same
/// command tree, 80 columns as without a terminal); the built binary's agree, checked on a few.
@Suite("Command tree")
struct CommandTreeTests {
    /// The subcommands `quarantine PATH --help` lists.
    static func subcommands(_ path: [String]) -> [String] {
        let help = InProcessCLI.help(path).stdout
        guard let range = help.range(of: "SUBCOMMANDS:\n") else { return [] }
        return help[range.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { !$0.isEmpty && !$0.hasPrefix("  See ") }
            .compactMap { line -> String? in
                guard line.hasPrefix("  "), let first = line.dropFirst(2).first, first.isLetter else { return nil }
                return String(line.dropFirst(2).prefix { $0 != " " })
            }
    }

    /// Every verb, depth first: ["agent"], ["watch"], ["watch", "list"], ...
    static func verbs(under path: [String] = []) -> [[String]] {
        var all: [[String]] = []
        for name in subcommands(path) {
            all.append(path + [name])
            all += verbs(under: path + [name])
        }
        return all
    }

    /// The verbs whose output is data a script reads.
    static let dataVerbs: Set<String> = ["status", "watch list", "config show", "list", "show", "history", "scan", "doctor",
                                         "guardian status", "mode", "service status", "count"]

    @Test("each verb's --help has an example naming its own options and says its exit status; the data verbs have --json")
    func helpOfEveryVerb() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let verbs = Self.verbs()
        #expect(verbs.count >= 25, "\(verbs)")
        // The binary prints the same help screens as the library in this process.
        for path in [[], ["watch"], ["watch", "add"], ["guardian", "set-pin"], ["scan"]] {
            let binary = try await cli.run(path + ["--help"], environment: ["COLUMNS": "80"])
            let library = InProcessCLI.help(path)
            #expect(binary.status == library.status && binary.stdout == library.stdout, "quarantine \(path.joined(separator: " ")) --help differs in process:\n\(binary.stdout)\n---\n\(library.stdout)")
        }
        var names = Set(verbs.map { $0.joined(separator: " ") })
        for verb in verbs {
            let name = verb.joined(separator: " ")
            let help = InProcessCLI.help(verb)
            #expect(help.status == 0, "\(name) --help: \(help.status)")
            let text = help.stdout
            #expect(text.contains("Exit status:"), "\(name): no exit status in its help")
            let examples = text.components(separatedBy: "Examples:\n").dropFirst().first?
                .split(separator: "\n", omittingEmptySubsequences: false).prefix { $0.hasPrefix("  ") }
                .map { $0.trimmingCharacters(in: .whitespaces) } ?? []
            #expect(!examples.isEmpty, "\(name): no example in its help")
            for example in examples {
                // The command of the example: up to a pipe, && or a comment; `sudo` aside.
                let command = example.components(separatedBy: "|")[0].components(separatedBy: "&&")[0].components(separatedBy: "#")[0]
                    .components(separatedBy: "<")[0]
                var words = command.split(separator: " ").map(String.init)
                if words.first == "sudo" { words.removeFirst() }
                guard words.first == "quarantine" else { continue } // a systemctl or jq line
                words.removeFirst()
                var path: [String] = []
                while let next = words.first, !next.hasPrefix("-"), names.contains((path + [next]).joined(separator: " ")) {
                    path.append(next); words.removeFirst()
                }
                #expect(path.first == verb.first, "\(name): the example '\(example)' runs another verb")
                let ownHelp = path == verb ? text : InProcessCLI.help(path).stdout
                for option in words where option.hasPrefix("--") {
                    #expect(ownHelp.contains(option), "\(name): the example '\(example)' uses \(option), which \(path.joined(separator: " ")) does not have")
                }
            }
            if Self.dataVerbs.contains(name) {
                #expect(text.contains("--json"), "\(name) prints data but has no --json")
            }
            names.insert(name)
        }
        #expect(Self.dataVerbs.isSubset(of: Set(verbs.map { $0.joined(separator: " ") })))
    }

    @Test("--json prints JSON for every data verb that can run here (no agent, an empty vault, no user service)")
    func jsonOutput() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let card = cli.home.appendingPathComponent("card.jpg")
        _ = try await cli.run(["testcard", card.path])
        _ = try await cli.run(["scan", "--quarantine", card.path])
        for arguments in [["status"], ["watch", "list"], ["config", "show"], ["list"], ["show", "1"], ["history"], ["doctor"], ["mode"],
                          ["service", "status"], ["count"], ["scan", CLIRunner.photos.appendingPathComponent("astronaut__q50.jpg").path]] {
            let result = try await cli.run(arguments + ["--json"])
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(!lines.isEmpty, "\(arguments): no output")
            // One JSON value, or JSON Lines.
            let whole = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
            let each = lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) != nil }
            #expect(whole != nil || each, "\(arguments) --json is not JSON:\n\(result.stdout)")
        }
    }

    @Test("the documented exit statuses are the real ones: 0, 1 flagged or refused, 2 usage or cannot, 3 not running or not installed")
    func exitStatuses() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let card = cli.home.appendingPathComponent("card.jpg")
        _ = try await cli.run(["testcard", card.path])
        #expect(try await cli.run(["scan", card.path]).status == 1)
        #expect(try await cli.run(["scan", CLIRunner.photos.appendingPathComponent("astronaut__q50.jpg").path]).status == 0)
        #expect(try await cli.run(["status"]).status == 3)
        #expect(try await cli.run(["service", "status"]).status == 3)
        #expect(try await cli.run(["show", "999"]).status == 2)
        #expect(try await cli.run(["list", "--no-such-option"]).status == 2)
        #expect(try await cli.run(["testcard", card.path]).status == 2, "an existing file without --force")
        #expect(try await cli.run(["mode", "--json", "child"]).status == 2)
        #expect(try await cli.run(["list"]).status == 0)
    }

    @Test("the progress bar draws only on a terminal, and not with NO_COLOR set; piped output has no escape sequence")
    func decorations() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let folder = cli.home.appendingPathComponent("photos")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in ["astronaut__q50.jpg", "brick__q50.jpg", "camera.png"] {
            try FileManager.default.copyItem(at: CLIRunner.photos.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        let escape = "\u{1B}["
        // NO_COLOR empty counts as unset (no-color.org); the test runner may have it set.
        let terminal = try await cli.throughTerminal(["scan", folder.path], environment: ["NO_COLOR": ""])
        #expect(terminal.status == 0)
        #expect(terminal.stdout.contains(escape) && terminal.stdout.contains("3/3 files"), "no progress bar on a terminal:\n\(terminal.stdout)")
        let plain = try await cli.throughTerminal(["scan", folder.path], environment: ["NO_COLOR": "1"])
        #expect(plain.status == 0)
        #expect(!plain.stdout.contains(escape), "escape sequences with NO_COLOR set:\n\(plain.stdout)")
        #expect(plain.stdout.contains("Scanned 3 files"), "\(plain.stdout)")
        let piped = try await cli.run(["scan", folder.path])
        #expect(!piped.stdout.contains(escape) && !piped.stderr.contains(escape))
    }
}
