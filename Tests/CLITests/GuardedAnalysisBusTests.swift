import Foundation
import Testing
import TestSupport

/// The analysis service on the session bus of an account a guardian service protects (issue 31):
/// `guarded_bus.sh` with a real account, the child trying to get `disabled`. Needs root; takes
/// /tmp/attack.lock (it lists the account in /etc/quarantine/protected-uids for its run).
/// `make test` runs it in the side process (the Makefile's SIDE_SUITES): in the main part it was
/// started among the last and, 9-12 s of mostly waiting, ended the run alone.
@Suite("The analysis service on a protected account's session bus")
struct GuardedAnalysisBusTests {
    @Test("on a protected account the agent only forwards: descriptive whatever the child's configuration says, pictures, videos and streams forwarded to the guardian service, the same from a forwarder the child restarts",
          .enabled(if: getuid() == 0, "needs root to make the test's account and list it as protected"))
    func protectedChild() async throws {
        let script = CLIRunner.repositoryRoot.appendingPathComponent("Tests/CLITests/guarded_bus.sh").path
        let started = Date()
        defer { print("guarded_bus.sh: started \(started), \(String(format: "%.1f", Date().timeIntervalSince(started))) s") }
        let result = try await offPool {
            try Spawned.run("/usr/bin/flock", ["/tmp/attack.lock", "/bin/bash", script, CLIRunner.binary.path],
                            environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], timeout: 1200)
        }
        let output = String(decoding: result.stdout + result.stderr, as: UTF8.self)
        #expect(result.status == 0, "\(output)")
        #expect(!output.contains("FAIL:"), "\(output)")
        #expect(output.components(separatedBy: "\nok: ").count - 1 == 12, "\(output)")
        print(output)
    }
}
