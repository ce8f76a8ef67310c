import Foundation
import Testing
import TestSupport

/// The guardian deployment with real accounts (`guardian_e2e.sh`): made by the test, removed
/// after; needs root (skipped otherwise, saying so).
@Suite("Guardian service")
struct GuardianTests {
    @Test("a child's account: the card held, checked and hidden, a clean photo back identical; every attempt of the child fails clearly; the guardian does everything without the PIN",
          .enabled(if: getuid() == 0, "needs root to make the test's accounts (useradd) and run the service as the quarantine user"))
    func childAndGuardian() async throws {
        // The guardian's desktop session: a private bus with a stand-in notification server.
        let bus = try PrivateSessionBus()
        defer { bus.stop() }
        try bus.startStandInServer()
        let script = CLIRunner.repositoryRoot.appendingPathComponent("Tests/CLITests/guardian_e2e.sh").path
        let photo = CLIRunner.photos.appendingPathComponent("astronaut.png").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script, CLIRunner.binary.path, photo]
        var environment = ProcessInfo.processInfo.environment
        environment["GUARDIAN_BUS"] = bus.address
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = await offPool {
            let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return text
        }
        #expect(process.terminationStatus == 0, "\(output)")
        #expect(output.contains("ok: another account is refused: quarantine: this service protects"), "\(output)")
        #expect(output.components(separatedBy: "\nok: ").count >= 25, "\(output)")
        let told = try bus.recordedCalls().compactMap { $0["summary"] as? String }
        #expect(told.contains { $0.hasSuffix("asks for a picture back") }, "\(told)")
    }
}
