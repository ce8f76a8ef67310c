import ArgumentParser
import QuarantineCLI
import Testing

/// Every command of the tree names itself. Without `commandName`, ArgumentParser takes the name
/// from the type (`String(describing: Self.self)`), and that first description of a metatype
/// scans every protocol conformance in the binary: measured, 2-3 ms of CPU of each start of
/// `quarantine`, whatever the verb (the tree is built whole before parsing).
@Suite("Command names")
struct CommandNamesTests {
    @Test("every command of the tree has an explicit commandName")
    func everyCommandNamed() {
        var unnamed: [String] = []
        func walk(_ command: any ParsableCommand.Type, _ path: [String]) {
            let configuration = command.configuration
            let name = configuration.commandName ?? "<\(String(reflecting: command))>"
            if configuration.commandName == nil { unnamed.append((path + [name]).joined(separator: " ")) }
            for subcommand in configuration.subcommands { walk(subcommand, path + [name]) }
        }
        walk(Quarantine.self, [])
        #expect(unnamed.isEmpty, "commands without commandName: \(unnamed)")
    }
}
