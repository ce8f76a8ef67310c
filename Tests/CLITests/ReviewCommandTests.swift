import Foundation
import QuarantineCore
import Testing
import TestSupport

/// `quarantine review` run as a person runs it: the built binary, a private HOME and runtime
/// folder, a stand-in `xdg-open` on PATH.
@Suite("review command")
struct ReviewCommandTests {
    /// A runtime folder (0700, as logind makes it) and a folder of stand-in programs.
    struct Session {
        let runner: CLIRunner
        var runtime: String { runner.home.appendingPathComponent("run").path }
        var bin: String { runner.home.appendingPathComponent("bin").path }

        init() throws {
            runner = try CLIRunner()
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        }

        /// A stand-in `xdg-open`: a shell script with `body`.
        func xdgOpen(_ body: String) throws {
            let path = bin + "/xdg-open"
            try Data("#!/bin/sh\n\(body)\n".utf8).write(to: URL(fileURLWithPath: path))
            chmod(path, 0o755)
        }

        var environment: [String: String] { ["XDG_RUNTIME_DIR": runtime, "PATH": bin + ":/usr/bin:/bin"] }
    }

    @Test("what xdg-open answered is said: its failure with its status, or that the browser was asked (the command is the only one to wait for it: issue 32's reaper raced a second waitpid, which got ECHILD and called a failure a success)",
          arguments: [3, 0])
    func browserAnswerIsReported(status: Int) async throws {
        let session = try Session(); defer { session.runner.cleanUp() }
        try session.xdgOpen("exit \(status)")
        let result = try await session.runner.run(["review", "--idle-timeout", "1"], environment: session.environment)
        #expect(result.status == 0, "\(result.stderr)")
        let asked = result.stdout.contains("Asked the browser to open the review page")
        if status == 0 {
            #expect(asked, "\(result.stdout) \(result.stderr)")
        } else {
            #expect(result.stderr.contains("could not open a browser (xdg-open exited with status \(status))"), "stderr: \(result.stderr) stdout: \(result.stdout)")
            #expect(!asked, "\(result.stdout)")
            // The address is printed for the person to open by hand.
            #expect(result.stdout.contains("http://127.0.0.1:"), "\(result.stdout)")
        }
    }

    @Test("--config: the page reads the named file (its watched folder on the settings page); a missing file exits 2; with --user it is refused")
    func configurationFile() async throws {
        let session = try Session(); defer { session.runner.cleanUp() }
        let folder = session.runner.home.appendingPathComponent("elsewhere-\(UUID().uuidString.prefix(8))").path
        let config = session.runner.home.appendingPathComponent("other.toml").path
        try Data("mode = \"adult\"\n[watch]\nincoming = [\"\(folder)\"]\n".utf8).write(to: URL(fileURLWithPath: config))

        let missing = try await session.runner.run(["review", "--print-url", "--config", config + ".missing"], environment: session.environment)
        #expect(missing.status == 2 && missing.stderr.contains("no such file"), "\(missing.status) \(missing.stderr)")
        let withUser = try await session.runner.run(["review", "--print-url", "--config", config, "--user", "nobody"], environment: session.environment)
        #expect(withUser.status != 0 && withUser.stderr.contains("--config and --user"), "\(withUser.status) \(withUser.stderr)")

        let page = Task { try await session.runner.run(["review", "--print-url", "--idle-timeout", "3", "--config", config], environment: session.environment) }
        let addressFolder = session.runtime + "/quarantine-review"
        var running: (pid: Int32, url: String)?
        for _ in 0..<200 where running == nil {
            running = ReviewPageAddress.running(in: addressFolder)
            if running == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let url = try #require(running?.url, "the page did not write its address")
        let jar = session.runner.home.appendingPathComponent("cookies").path
        // The secret's address sets the cookie (and answers a page that refreshes to /settings);
        // then the page itself, with the cookie.
        let base = String(url.prefix(while: { $0 != "?" }).dropLast())
        let settings = try await offPool("curl") {
            _ = try Spawned.run("/usr/bin/curl", ["-s", "-c", jar, "-b", jar, ReviewPageAddress.address(url, at: "/settings")], environment: ["PATH": "/usr/bin:/bin"], timeout: 30)
            return try Spawned.run("/usr/bin/curl", ["-s", "-c", jar, "-b", jar, base + "/settings"], environment: ["PATH": "/usr/bin:/bin"], timeout: 30)
        }
        let html = String(decoding: settings.stdout, as: UTF8.self)
        #expect(html.contains(folder), "the settings page does not list the folder of --config's file:\n\(html.prefix(3000))")
        let served = try await page.value
        #expect(served.status == 0, "\(served.stderr)")
    }
}
