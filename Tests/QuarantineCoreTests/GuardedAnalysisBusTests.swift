import Foundation
import Locking
import Logging
import QuarantineAgent
import SensitivityAnalysis
import ServiceSupport
import Testing
import TestSupport

/// The policy a protected account's applications get from ``GuardedAnalysisBus`` on a private
/// session bus, with the guardian service's answer given by the test.
@Suite("GuardedAnalysisBus: the policy on a protected account's session bus")
struct GuardedAnalysisBusPolicyTests {
    @Test("it follows the guardian service (adult: simple, child: descriptive, no answer: descriptive), never disabled, each change with PropertiesChanged (gdbus monitor)")
    func followsGuardianService() async throws {
        let bus = try PrivateSessionBus(); defer { bus.stop() }
        let mode = Locked<AnalysisMode?>(.adult)
        let served = try GuardedAnalysisBus.start(address: bus.address, user: "sam", logger: Logger(label: "test"),
                                                  refreshEvery: .milliseconds(100), askMode: { _ in mode.withLock { $0 } })
        defer { served.stop() }
        // Descriptive until the guardian service's first answer, asked on the refresher's thread.
        for _ in 0..<100 where served.policy != .simpleInterventions { try await Task.sleep(for: .milliseconds(20)) }
        #expect(served.policy == .simpleInterventions)
        let environment = bus.environment.merging(["PATH": "/usr/bin:/bin"]) { $1 }
        func property() async throws -> String {
            let result = try await offPool {
                try Spawned.run("/usr/bin/gdbus", ["call", "--session", "--dest", AnalysisBus.busName, "--object-path", AnalysisBus.objectPath,
                                                   "--method", "org.freedesktop.DBus.Properties.Get", AnalysisBus.interface, "AnalysisPolicy"],
                                environment: environment, timeout: 10)
            }
            return String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try await property() == "(<'simple'>,)")
        // gdbus monitor prints the service's signals while the guardian service stops answering,
        // says adult mode, then child mode. Each step waits for what it needs (the monitor on the
        // bus, the policy changed) instead of a fixed time: a loaded CI run is seconds late. The
        // monitor gets SIGKILL: it inherits the test process's blocked SIGTERM.
        let stop = bus.directory.appendingPathComponent("monitor-stop").path
        let script = "/usr/bin/gdbus monitor --session --dest \(AnalysisBus.busName) & m=$!; "
            + "while [ ! -e '\(stop)' ]; do sleep 0.05; done; sleep 0.5; kill -KILL $m"
        async let monitored = offPool { try Spawned.run("/bin/sh", ["-c", script], environment: environment, timeout: 60) }
        func connections() async throws -> Int {
            let names = try await offPool {
                try Spawned.run("/usr/bin/gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                                                   "--method", "org.freedesktop.DBus.ListNames"], environment: environment, timeout: 10)
            }
            return String(decoding: names.stdout, as: UTF8.self).components(separatedBy: "':1.").count - 1
        }
        // The service, this call and the monitor.
        for _ in 0..<200 where try await connections() < 3 { try await Task.sleep(for: .milliseconds(50)) }
        try await Task.sleep(for: .milliseconds(300))
        func awaitPolicy(_ policy: AnalysisPolicy) async throws {
            for _ in 0..<500 where served.policy != policy { try await Task.sleep(for: .milliseconds(20)) }
        }
        mode.withLock { $0 = nil }
        try await awaitPolicy(.descriptiveInterventions)
        #expect(served.policy == .descriptiveInterventions)
        #expect(try await property() == "(<'descriptive'>,)")
        mode.withLock { $0 = .adult }
        try await awaitPolicy(.simpleInterventions)
        #expect(served.policy == .simpleInterventions)
        mode.withLock { $0 = .child }
        try await awaitPolicy(.descriptiveInterventions)
        FileManager.default.createFile(atPath: stop, contents: nil)
        let output = String(decoding: (try await monitored).stdout, as: UTF8.self)
        let changes = output.split(separator: "\n").filter { $0.contains("org.freedesktop.DBus.Properties.PropertiesChanged") }
        #expect(changes.count == 3, "descriptive, simple, descriptive: \(output)")
        #expect(changes.first?.contains("{'AnalysisPolicy': <'descriptive'>}") == true, "\(output)")
        #expect(!output.contains("disabled"))
        #expect(try await property() == "(<'descriptive'>,)")
    }

    @Test("a picture and a stream answer Unavailable while the guardian service cannot be asked; a bad direction is InvalidArgs; other objects are not there")
    func analysisUnavailable() async throws {
        let bus = try PrivateSessionBus(); defer { bus.stop() }
        let served = try GuardedAnalysisBus.start(address: bus.address, user: "sam", logger: Logger(label: "test"), askMode: { _ in .child },
                                                  connect: { throw ServiceError(code: .closed, operation: "connect", message: "no guardian service in this test") })
        defer { served.stop() }
        let environment = bus.environment.merging(["PATH": "/usr/bin:/bin"]) { $1 }
        func gdbus(_ method: String) async throws -> String {
            let call = "gdbus call --session --dest \(AnalysisBus.busName) --object-path \(AnalysisBus.objectPath) --method \(AnalysisBus.interface).\(method)"
            return String(decoding: try await offPool { try Spawned.run("/bin/sh", ["-c", call], environment: environment, timeout: 10) }.stderr, as: UTF8.self)
        }
        let image = try await gdbus("AnalyzeImage 3 3</etc/hostname")
        #expect(image.contains(AnalysisBus.interface + ".Error.Unavailable") && image.contains("no guardian service in this test"), "\(image)")
        let fifo = try await gdbus("AnalyzeImage 3 3</dev/null")
        #expect(fifo.contains("org.freedesktop.DBus.Error.InvalidArgs"), "a device is not read: \(fifo)")
        let stream = try await gdbus("BeginStream p incoming")
        #expect(stream.contains(AnalysisBus.interface + ".Error.Unavailable") && stream.contains("no guardian service in this test"), "\(stream)")
        let sideways = try await gdbus("BeginStream p sideways")
        #expect(sideways.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(sideways)")
        let other = try await offPool {
            try Spawned.run("/usr/bin/gdbus", ["call", "--session", "--dest", AnalysisBus.busName, "--object-path", AnalysisBus.objectPath + "/stream/1",
                                               "--method", "org.freedesktop.DBus.Properties.GetAll", AnalysisBus.interface + ".Stream"],
                            environment: environment, timeout: 10)
        }
        #expect(String(decoding: other.stderr, as: UTF8.self).contains("UnknownObject"), "\(String(decoding: other.stderr, as: UTF8.self))")
    }
}

/// Whether an account counts as protected, from root's list (a list of the test's own here).
@Suite("ProtectedAccount: who the session forwarder serves")
struct ProtectedAccountTests {
    @Test("listed: protected; not listed: not; a malformed list protects only accounts with a guardian configuration")
    func fromTheList() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("protected-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = folder.appendingPathComponent("protected-uids").path
        let filter = SessionMountFilter(pamFolder: folder.path, listFile: list, moduleFolder: nil)
        let name = "qnobody\(UInt32.random(in: 10000...99999))"
        #expect(!ProtectedAccount.isProtected(uid: 4_000_123, user: name, filter: filter), "no list")
        try "# a comment\n4000123\t# \(name)\n".write(toFile: list, atomically: true, encoding: .utf8)
        #expect(ProtectedAccount.isProtected(uid: 4_000_123, user: name, filter: filter))
        #expect(!ProtectedAccount.isProtected(uid: 4_000_124, user: name, filter: filter))
        try "4000123\nnot a uid\n".write(toFile: list, atomically: true, encoding: .utf8)
        // No /etc/quarantine/NAME.toml for this name: an adult's agent keeps working.
        #expect(!ProtectedAccount.isProtected(uid: 4_000_123, user: name, filter: filter))
    }
}
