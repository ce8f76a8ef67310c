import Foundation
import GuardianAPI
import Logging
import QuarantineBackend
import QuarantineCLI
import QuarantineCore
@testable import QuarantineStore
import ServiceSupport
import Testing
@testable import GuardianService

/// The commands run in process (``Quarantine/exitStatus(running:)``), through the person's own
/// vault (``LocalBackend``) and through a guardian service served in process (``SocketBackend``
/// on one end of a socket pair, the server told the peer's uid as the kernel would tell it): the
/// same command, the same request types, one core.
@Suite("Commands through both backends")
struct CommandsThroughBothBackendsTests {
    static let childUID: uid_t = 42_520
    static let guardianUID: uid_t = 42_530

    /// An account's vault and configuration in a fresh folder, and a guardian service over them.
    final class Place: @unchecked Sendable {
        let folder: URL
        let vault: Vault
        let server: GuardianServer
        let configuration: URL
        var home: URL { folder.appendingPathComponent("home") }
        var downloads: URL { home.appendingPathComponent("Downloads") }

        init(mode: String = "child") throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-commands-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("home/Downloads"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("state"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("run"), withIntermediateDirectories: true)
            configuration = folder.appendingPathComponent("kid.toml")
            try Data("mode = \"\(mode)\"\n".utf8).write(to: configuration)
            vault = try Vault(root: folder.appendingPathComponent("state/vault").path,
                              store: AuditStore(path: folder.appendingPathComponent("state/audit.sqlite3").path))
            let guardian = CommandsThroughBothBackendsTests.guardianUID
            server = try GuardianServer(paths: GuardianPaths(user: "kid"), childUID: CommandsThroughBothBackendsTests.childUID, home: folder.appendingPathComponent("home").path,
                                        vault: vault, configurationPath: configuration.path, logger: Logger(label: "test"),
                                        socketPath: folder.appendingPathComponent("kid.sock").path, guardianCheck: { $0 == guardian }, reload: {})
            server.start()
        }

        func cleanUp() {
            server.stop()
            _ = server.waitUntilStopped()
            try? FileManager.default.removeItem(at: folder)
        }

        /// The account's own backend: its vault, its configuration, its home.
        var local: any QuarantineBackend {
            let vault = vault
            return LocalBackend(account: "kid", configurationPath: configuration.path,
                                environment: ["HOME": home.path, "XDG_RUNTIME_DIR": folder.appendingPathComponent("run").path,
                                              "XDG_CONFIG_HOME": folder.appendingPathComponent("no-config").path],
                                openVault: { _ in vault })
        }

        /// The guardian service's backend, for a caller of `uid`.
        func socket(as uid: uid_t) throws -> any QuarantineBackend {
            let (mine, theirs) = try LocalSocket.pair()
            server.admit(theirs, peer: LocalSocket.Peer(pid: 1, uid: uid, gid: uid))
            return SocketBackend(client: GuardianClient(paths: GuardianPaths(user: "kid"), connected: mine))
        }

        /// A flagged item in the vault (a small file moved in).
        @discardableResult
        func item(_ name: String) throws -> VaultItem {
            let file = downloads.appendingPathComponent(name)
            try Data("not a picture \(name)".utf8).write(to: file)
            return try vault.quarantine(path: file.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .child, actor: "test")
        }
    }

    /// What a command wrote and its exit status.
    struct Ran {
        var status: Int32
        var out: String
        var err: String
    }

    /// Text written by a command, gathered from any thread.
    final class Written: @unchecked Sendable {
        private let lock = NSLock()
        private var text = ""
        func add(_ more: String) { lock.lock(); text += more; lock.unlock() }
        var all: String { lock.lock(); defer { lock.unlock() }; return text }
    }

    /// Answers typed in order (nil once they run out).
    final class Answers: @unchecked Sendable {
        private let lock = NSLock()
        private var left: [String]
        init(_ answers: [String]) { left = answers }
        func next() -> String? { lock.lock(); defer { lock.unlock() }; return left.isEmpty ? nil : left.removeFirst() }
    }

    /// Runs `quarantine ARGUMENTS` in process through `backend`; `answers` are typed at a
    /// terminal (`interactive`) or read from standard input.
    static func run(_ arguments: [String], through backend: any QuarantineBackend, answers: [String] = [], interactive: Bool = false) async -> Ran {
        let out = Written(), err = Written(), typed = Answers(answers)
        let console = Console(output: { out.add($0) }, error: { err.add($0) }, readLine: { typed.next() },
                              readSecret: { prompt in err.add(prompt); return typed.next() }, interactive: interactive)
        let status = await Backends.$chosen.withValue(backend) {
            await Console.$current.withValue(console) { await Quarantine.exitStatus(running: arguments) }
        }
        return Ran(status: status, out: out.all, err: err.all)
    }

    static func jsonLines(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    // MARK: - Seeing

    @Test("list, history and count print the same JSON through the person's vault and through the guardian service; show names the item either way")
    func seeingIsTheSame() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let first = try place.item("first.bin"), second = try place.item("second.bin")
        let guardian = try place.socket(as: Self.guardianUID)
        for verb in [["list", "--json"], ["list", "--all", "--json"], ["history", "--json"], ["count", "--json"]] {
            let local = await Self.run(verb, through: place.local)
            let remote = await Self.run(verb, through: guardian)
            #expect(local.status == 0 && remote.status == 0, "\(verb): \(local.err) \(remote.err)")
            #expect(local.out == remote.out, "\(verb) differs:\n\(local.out)\n\(remote.out)")
        }
        let listed = Self.jsonLines(await Self.run(["list", "--json"], through: guardian).out)
        #expect(listed.map { $0["id"] as? Int } == [Int(second.id!), Int(first.id!)])
        #expect(listed.first?["original_path"] as? String == second.originalPath && listed.first?["mode"] as? String == "child")
        #expect(listed.first?.keys.sorted() == ["has_preview", "id", "mode", "original_path", "original_path_bytes", "reasons", "sha256", "size", "status", "when"])
        let counted = Self.jsonLines(await Self.run(["count", "--json"], through: place.local).out).first
        #expect(counted?["in_vault"] as? Int == 2 && counted?["asked_back"] as? Int == 0 && (counted?["by_status"] as? [String: Int])?["quarantined"] == 2)
        for backend in [place.local, guardian] {
            let shown = await Self.run(["show", "\(first.id!)", "--json"], through: backend)
            let object = Self.jsonLines(shown.out).first
            #expect(object?["original_path"] as? String == first.originalPath && (object?["events"] as? [Any])?.isEmpty == false, "\(shown)")
            let missing = await Self.run(["show", "999"], through: backend)
            #expect(missing.status == 2 && missing.err.contains("there is no item 999"), "\(missing)")
        }
    }

    // MARK: - Acting

    @Test("child mode: release asks twice and takes the guardian PIN, the same through the person's vault and through the child's own connection to the service")
    func childReleaseThroughBothBackends() async throws {
        let place = try Place(); defer { place.cleanUp() }
        try GuardianPIN(store: place.vault.store).set("2468", rounds: GuardianPIN.testRounds)
        for (name, backend) in [("local", place.local), ("socket", try place.socket(as: Self.childUID))] {
            let item = try place.item("\(name).bin")
            let id = "\(item.id!)"
            let listed = await Self.run(["list"], through: backend)
            #expect(listed.out.contains("\(name).bin: hidden, because it may show private parts of the body"), "\(name): \(listed)")
            let yes = await Self.run(["release", id, "--yes"], through: backend)
            #expect(yes.status == 2 && yes.err.contains("--yes works only in adult mode"), "\(name): \(yes)")
            let noTerminal = await Self.run(["release", id], through: backend)
            #expect(noTerminal.status == 1 && noTerminal.err.contains("needs a grown-up at the keyboard"), "\(name): \(noTerminal)")
            let wrong = await Self.run(["release", id], through: backend, answers: ["y", "y", "1111"], interactive: true)
            #expect(wrong.status == 1 && wrong.out.contains("That PIN is not right"), "\(name): \(wrong)")
            #expect(!FileManager.default.fileExists(atPath: item.originalPath))
            let asked = await Self.run(["release", id], through: backend, answers: ["y", "y", ""], interactive: true)
            #expect(asked.status == 1 && asked.out.contains("Your question is saved"), "\(name): \(asked)")
            let right = await Self.run(["release", id], through: backend, answers: ["y", "y", "2468"], interactive: true)
            #expect(right.status == 0 && right.out.contains("Released to \(item.originalPath)"), "\(name): \(right)")
            #expect(FileManager.default.fileExists(atPath: item.originalPath))
        }
    }

    @Test("purge and watch list reach the guardian service now: a guardian purges and lists the child's folders; the child needs the PIN to purge")
    func purgeAndWatchListReachTheService() async throws {
        let place = try Place(); defer { place.cleanUp() }
        try GuardianPIN(store: place.vault.store).set("2468", rounds: GuardianPIN.testRounds)
        let old = try place.item("old.bin")
        let child = try place.socket(as: Self.childUID), guardian = try place.socket(as: Self.guardianUID)
        let watched = Self.jsonLines(await Self.run(["watch", "list", "--json"], through: child).out).first
        #expect(watched?["mode"] as? String == "child" && watched?["default_download_folder"] as? Bool == true)
        #expect((watched?["folders"] as? [[String: Any]])?.first?["path"] as? String == place.downloads.path, "\(String(describing: watched))")
        let childPurge = await Self.run(["purge", "--older-than", "0"], through: child)
        #expect(childPurge.status == 1 && childPurge.out.contains("would be deleted") && childPurge.err.contains("needs a grown-up"), "\(childPurge)")
        #expect(try place.vault.store.item(old.id!)?.status == .quarantined)
        let purged = await Self.run(["purge", "--older-than", "0"], through: guardian)
        #expect(purged.status == 0 && purged.out.contains("Purged 1 item"), "\(purged)")
        #expect(try place.vault.store.item(old.id!)?.status == .purged)
        // A guardian watches and unwatches a folder of the child's home, and the list says so.
        try FileManager.default.createDirectory(at: place.home.appendingPathComponent("Shared"), withIntermediateDirectories: true)
        let added = await Self.run(["watch", "add", "--outgoing", "Shared"], through: guardian)
        #expect(added.status == 0 && added.out.contains("Watching \(place.home.path)/Shared (outgoing) for kid."), "\(added)")
        #expect(await Self.run(["watch", "list"], through: guardian).out.contains("\(place.home.path)/Shared  (outgoing)"))
        let removed = await Self.run(["watch", "remove", "Shared"], through: guardian)
        #expect(removed.status == 0, "\(removed)")
        #expect(!(await Self.run(["watch", "list"], through: guardian).out.contains("Shared")))
        let childWatch = await Self.run(["watch", "add", "Shared"], through: child)
        #expect(childWatch.status == 1 && childWatch.err.contains("only a guardian can do this"), "\(childWatch)")
    }

    @Test("set-pin: changing a PIN that is set takes the current one locally; a guardian of the service sets it without")
    func setPINThroughBothBackends() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let first = await Self.run(["guardian", "set-pin", "--pin-stdin"], through: place.local, answers: ["2468", "2468"])
        #expect(first.status == 0 && first.out == "The guardian PIN is set.\n", "\(first)")
        let wrong = await Self.run(["guardian", "set-pin", "--pin-stdin"], through: place.local, answers: ["1111"])
        #expect(wrong.status == 1 && wrong.err.contains("that is not the current PIN; nothing changed"), "\(wrong)")
        let differ = await Self.run(["guardian", "set-pin", "--pin-stdin"], through: place.local, answers: ["2468", "1357", "1358"])
        #expect(differ.status == 1 && differ.err.contains("the two PINs differ"), "\(differ)")
        let changed = await Self.run(["guardian", "set-pin", "--pin-stdin"], through: place.local, answers: ["2468", "1357", "1357"])
        #expect(changed.status == 0, "\(changed)")
        let byGuardian = await Self.run(["guardian", "set-pin", "--pin-stdin"], through: try place.socket(as: Self.guardianUID), answers: ["9753", "9753"])
        #expect(byGuardian.status == 0 && byGuardian.out == "The guardian PIN of kid is set.\n", "\(byGuardian)")
        #expect(try GuardianPIN(store: place.vault.store).check("9753", actor: "test") == .accepted)
    }

    @Test("mode: shown with its JSON and changed through either backend; leaving child mode locally takes the PIN")
    func modeThroughBothBackends() async throws {
        let place = try Place(); defer { place.cleanUp() }
        try GuardianPIN(store: place.vault.store).set("2468", rounds: GuardianPIN.testRounds)
        let guardian = try place.socket(as: Self.guardianUID)
        #expect(await Self.run(["mode", "--json"], through: guardian).out == #"{"mode":"child","user":"kid"}"# + "\n")
        #expect(await Self.run(["mode", "--json"], through: place.local).out == #"{"mode":"child"}"# + "\n")
        let wrong = await Self.run(["mode", "adult"], through: place.local, answers: ["1111"], interactive: true)
        #expect(wrong.status == 1 && wrong.out.contains("Still in child mode"), "\(wrong)")
        let left = await Self.run(["mode", "adult"], through: place.local, answers: ["2468"], interactive: true)
        #expect(left.status == 0 && left.out.hasPrefix("Now in adult mode."), "\(left)")
        let back = await Self.run(["mode", "child"], through: guardian)
        #expect(back.status == 0 && back.out == "kid is now in child mode.\n", "\(back)")
    }
}
