import Foundation
import MediaDecoding
import AccountPipeline
@testable import GuardianAPI
import Locking
import Logging
import QuarantineCore
@testable import QuarantineStore
import ServiceSupport
import Testing
import TestSupport
@testable import GuardianService

/// The guardian service's socket, served in process: a real vault and database in a fresh folder,
/// a server listening in that folder, and connections made as any account (one end of a socket
/// pair handed to the server with the peer the test names, as the kernel would name it).
@Suite("GuardianServer", .ownThread)
struct GuardianServerTests {
    static let childUID: uid_t = 42_420
    static let guardianUID: uid_t = 42_430
    static let otherGuardianUID: uid_t = 42_431
    static let strangerUID: uid_t = 42_440

    /// A protected account's state, and its service's socket server.
    final class Place: @unchecked Sendable {
        let folder: URL
        let vault: Vault
        let server: GuardianServer
        var home: URL { folder.appendingPathComponent("home") }
        var downloads: URL { home.appendingPathComponent("Downloads") }

        init(limits: GuardianServer.Limits = .init(),
             accepting: (@Sendable (LocalSocket) -> Result<LocalSocket, LocalSocket.AcceptFailure>)? = nil,
             sharedFolders: (URL) -> [SharedFolder] = { _ in [] }, analysis: GuardianAnalysis? = nil, streams: GuardianStreams? = nil) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-server-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("home/Downloads"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("state"), withIntermediateDirectories: true)
            let configuration = folder.appendingPathComponent("kid.toml")
            try Data("mode = \"child\"\n".utf8).write(to: configuration)
            vault = try Vault(root: folder.appendingPathComponent("state/vault").path,
                              store: AuditStore(path: folder.appendingPathComponent("state/audit.sqlite3").path))
            try vault.store.recordMode(.child, from: .adult, actor: "test")
            let guardians: Set<uid_t> = [GuardianServerTests.guardianUID, GuardianServerTests.otherGuardianUID]
            server = try GuardianServer(paths: GuardianPaths(user: "kid"), childUID: GuardianServerTests.childUID, home: folder.appendingPathComponent("home").path,
                                        vault: vault, configurationPath: configuration.path, logger: Logger(label: "test"),
                                        socketPath: folder.appendingPathComponent("kid.sock").path, limits: limits,
                                        guardianCheck: { guardians.contains($0) },
                                        accepting: accepting ?? { $0.acceptOrErrno() }, sharedFolders: sharedFolders(folder), analysis: analysis, streams: streams, reload: {})
            server.start()
        }

        func cleanUp() {
            server.stop()
            _ = server.waitUntilStopped()
            try? FileManager.default.removeItem(at: folder)
        }

        /// A connection to the server as `uid` (the server is told the peer is `uid`).
        func connect(as uid: uid_t) throws -> GuardianClient {
            let (mine, theirs) = try LocalSocket.pair()
            server.admit(theirs, peer: LocalSocket.Peer(pid: 1, uid: uid, gid: uid))
            return GuardianClient(paths: GuardianPaths(user: "kid"), connected: mine)
        }

        /// The raw end of a connection as `uid`, admitted after `before` ran on it.
        func rawConnection(as uid: uid_t, before: (LocalSocket) throws -> Void = { _ in }) throws -> LocalSocket {
            let (mine, theirs) = try LocalSocket.pair()
            try before(mine)
            server.admit(theirs, peer: LocalSocket.Peer(pid: 1, uid: uid, gid: uid))
            return mine
        }

        /// A flagged item in the vault (a small file moved in).
        @discardableResult
        func item(_ name: String) throws -> VaultItem {
            let file = downloads.appendingPathComponent(name)
            try Data("not a picture \(name)".utf8).write(to: file)
            return try vault.quarantine(path: file.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .child, actor: "test")
        }
    }

    /// What a role got: nil when it was served, else the refusal's words.
    static func outcome<Request: GuardianRequest>(_ client: GuardianClient, _ request: Request) -> String? {
        do {
            let (answer, preview) = try client.send(request)
            if let preview { close(preview) }
            switch answer.refusal {
            case nil: return answer.answer == nil ? "served without an answer" : nil
            case .refused(let words): return words
            case .wrongPIN: return "wrong PIN"
            case .waitForPIN: return "wait for PIN"
            case .failed(let words): return "failed: \(words)"
            case .invalid(let error): return "invalid: \(error)"
            }
        } catch { return "error: \(error)" }
    }

    /// A pipe: its read end sees end of file once every copy of the write end is closed (one in
    /// flight in a socket's queue counts too), so it tells whether a descriptor sent was freed.
    static func pipeEnds() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0, fcntl(fds[0], F_SETFL, O_NONBLOCK) == 0 else { throw ServiceError(code: .fileSystem, operation: "pipe", message: "no pipe") }
        return (fds[0], fds[1])
    }

    /// Whether the pipe's write end sees no reader left (POLLERR) within `seconds`: every read
    /// end, the copies a service was given too, closed. (While a reader is left the pipe is
    /// writable, POLLOUT alone: the wait is for POLLERR itself, not for the first event, which
    /// ended it at once in two CI runs.)
    static func readEndsAllClosed(_ writeEnd: Int32, within seconds: Double = 3) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var probe = [pollfd(fd: writeEnd, events: Int16(POLLOUT), revents: 0)]
        while true {
            probe[0].revents = 0
            if poll(&probe, 1, 0) > 0 && probe[0].revents & Int16(POLLERR) != 0 { return true }
            guard Date() < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Whether the pipe's read end reaches end of file within `seconds` (every write end closed).
    static func writeEndsAllClosed(_ readEnd: Int32, within seconds: Double = 3) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var byte: UInt8 = 0
        while Date() < deadline {
            let n = read(readEnd, &byte, 1)
            if n == 0 { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return false
    }

    // MARK: - The route table, for every role

    @Test("every verb for every role: the child, a guardian, root and a stranger get what the route table gives them, over the socket")
    func everyVerbForEveryRole() throws {
        let place = try Place(); defer { place.cleanUp() }
        try GuardianPIN(store: place.vault.store).set("2468", rounds: GuardianPIN.testRounds)
        let roles: [(String, uid_t)] = [("child", Self.childUID), ("guardian", Self.guardianUID), ("root", 0), ("stranger", Self.strangerUID)]
        let onlyGuardian = "only a guardian can do this"
        let strangerWords = "only kid, root and members of quarantine-guardians may use it"
        for (name, uid) in roles {
            let release = try place.item("\(name)-release.bin").id!
            let block = try place.item("\(name)-block.bin").id!
            let asked = try place.item("\(name)-ask.bin").id!
            try FileManager.default.createDirectory(at: place.home.appendingPathComponent("Music-\(name)"), withIntermediateDirectories: true)
            // Each verb's own request, and what a served answer must hold.
            let requests: [(GuardianVerb, (GuardianClient) -> String?)] = [
                (.hello, { Self.outcome($0, GuardianWire.Hello()) }),
                (.status, { Self.outcome($0, GuardianWire.Status()) }),
                (.list, { Self.outcome($0, GuardianWire.List()) }),
                (.show, { Self.outcome($0, GuardianWire.Show(id: release)) }),
                (.reveal, { Self.outcome($0, GuardianWire.Reveal(id: release)) }),
                (.history, { Self.outcome($0, GuardianWire.History()) }),
                (.ask, { Self.outcome($0, GuardianWire.Ask(id: asked)) }),
                (.release, { Self.outcome($0, GuardianWire.Release(id: release)) }),
                (.block, { Self.outcome($0, GuardianWire.Block(id: block)) }),
                (.mode, { Self.outcome($0, GuardianWire.Mode(mode: .adult)) }),
                (.watch, { Self.outcome($0, GuardianWire.Watch(folder: "Music-\(name)")) }),
                (.setPIN, { Self.outcome($0, GuardianWire.SetPIN(pin: "2468")) }),
                (.watchList, { Self.outcome($0, GuardianWire.WatchList()) }),
                (.count, { Self.outcome($0, GuardianWire.Count()) }),
                (.purge, { Self.outcome($0, GuardianWire.Purge(olderThanDays: 0)) }),
                // Without its descriptor (GuardianAnalysisTests passes one).
                (.analyze, { Self.outcome($0, GuardianWire.Analyze(kind: .image)) }),
                // A step that does not begin a stream (GuardianStreamTests begins them).
                (.stream, { Self.outcome($0, GuardianWire.LiveStream(step: .end)) }),
            ]
            #expect(Set(requests.map(\.0)) == Set(GuardianVerb.allCases), "a verb is not tried")
            for (verb, send) in requests {
                // A connection each: a stranger's is closed after its refusal.
                let got = send(try place.connect(as: uid))
                let wanted: String?
                switch (name, verb) {
                case ("stranger", _): wanted = strangerWords
                case ("child", .history), ("child", .mode), ("child", .watch), ("child", .setPIN): wanted = onlyGuardian
                case ("child", .release), ("child", .block), ("child", .purge), ("child", .reveal): wanted = "wrong PIN"   // the core's consent: no PIN given
                case (_, .ask) where name != "child", (_, .analyze) where name != "child", (_, .stream) where name != "child": wanted = "only kid can do this"
                case ("child", .analyze): wanted = "exactly one open descriptor"
                case ("child", .stream): wanted = "a stream begins with a 'begin' step"
                default: wanted = nil
                }
                if let wanted {
                    #expect(got?.contains(wanted) == true, "\(name) \(verb): wanted a refusal with '\(wanted)', got \(got ?? "served")")
                } else {
                    #expect(got == nil, "\(name) \(verb): wanted it served, got \(got ?? "")")
                }
                // The mode change is undone for the next role.
                if verb == .mode && got == nil { #expect(Self.outcome(try place.connect(as: 0), GuardianWire.Mode(mode: .child)) == nil) }
            }
        }
    }

    @Test("what each role is served: hello names the verbs its access allows, the child's PIN releases, a guardian's answers say what changed")
    func servedAnswersPerRole() throws {
        let place = try Place(); defer { place.cleanUp() }
        try GuardianPIN(store: place.vault.store).set("2468", rounds: GuardianPIN.testRounds)
        let child = try place.connect(as: Self.childUID), guardian = try place.connect(as: Self.guardianUID)
        // hello: the header says who asked; the answer, the verbs the route table lets them use.
        let (childHello, _) = try child.send(GuardianWire.Hello())
        #expect(childHello.role == .child && childHello.user == "kid" && childHello.mode == .child && childHello.pinIsSet == true)
        #expect(childHello.answer?.verbs == [.hello, .status, .list, .show, .release, .block, .ask, .watchList, .purge, .count, .reveal, .analyze, .stream])
        let (guardianHello, _) = try guardian.send(GuardianWire.Hello())
        #expect(guardianHello.role == .guardian)
        #expect(guardianHello.answer?.verbs == GuardianVerb.allCases.filter { $0 != .ask && $0 != .analyze && $0 != .stream })
        // The child with the PIN: released, and the file is back where it was.
        let item = try place.item("kept.bin")
        let (released, _) = try child.send(GuardianWire.Release(id: item.id!, pin: "2468"))
        #expect(released.refusal == nil && released.answer == .init(path: item.originalPath, renamed: false))
        #expect(FileManager.default.fileExists(atPath: item.originalPath))
        // A wrong PIN is the core's refusal, typed.
        let other = try place.item("other.bin")
        let (wrong, _) = try child.send(GuardianWire.Block(id: other.id!, pin: "1111"))
        guard case .wrongPIN = wrong.refusal else { Issue.record("a wrong PIN: \(String(describing: wrong.refusal))"); return }
        // A guardian: blocked without a PIN; the mode changes and the header says so.
        let (blocked, _) = try guardian.send(GuardianWire.Block(id: other.id!, keep: true))
        #expect(blocked.answer == .init(deleted: false, blockedHost: nil))
        let (mode, _) = try guardian.send(GuardianWire.Mode(mode: .adult))
        #expect(mode.answer == .init(changed: true) && mode.mode == .adult)
        let (again, _) = try guardian.send(GuardianWire.Mode(mode: .adult))
        #expect(again.answer == .init(changed: false) && again.mode == .adult)
        // watch: a folder in the home is written to the configuration; one outside is refused.
        try FileManager.default.createDirectory(at: place.home.appendingPathComponent("Music"), withIntermediateDirectories: true)
        let (watched, _) = try guardian.send(GuardianWire.Watch(folder: "Music"))
        #expect(watched.answer?.path == place.home.appendingPathComponent("Music").path)
        #expect(Self.outcome(guardian, GuardianWire.Watch(folder: "/etc"))?.contains("is outside kid's home") == true)
        #expect(Self.outcome(guardian, GuardianWire.SetPIN(pin: "12")) == "a PIN is 4 to 12 digits; nothing changed")
        // The history shows what was done, and by whom.
        let (history, _) = try guardian.send(GuardianWire.History())
        let kinds = history.answer?.events.map(\.kind) ?? []
        #expect(kinds.contains("released") && kinds.contains("mode_changed"))
    }

    @Test("a deleted configuration never reads as its defaults (adult mode): the mode in force stays child (issue 29)")
    func deletedConfigurationStaysChild() throws {
        let place = try Place(); defer { place.cleanUp() }
        // A guardian once chose adult mode (recorded); root then put child mode in the file by hand.
        try place.vault.store.recordMode(.adult, from: .child, actor: "test")
        let guardian = try place.connect(as: Self.guardianUID)
        #expect(try guardian.send(GuardianWire.Hello()).0.mode == .child)
        try FileManager.default.removeItem(at: place.folder.appendingPathComponent("kid.toml"))
        #expect(try guardian.send(GuardianWire.Hello()).0.mode == .child, "a missing file is not adult mode")
        #expect(Self.outcome(guardian, GuardianWire.Watch(folder: "Downloads"))?.contains("is missing") == true, "no edit of a file that is not there")
    }

    @Test("the route table declares every verb once, with its own request type, and the access the issue asks (history, mode, watch, set-pin: guardians; ask: the child)")
    func routeTableCoversEveryVerb() {
        #expect(Set(GuardianServer.routes.keys) == Set(GuardianVerb.allCases))
        for (verb, route) in GuardianServer.routes { #expect(route.verb == verb) }
        #expect(Set(GuardianWire.requestTypes.keys) == Set(GuardianVerb.allCases))
        for (verb, type) in GuardianWire.requestTypes { #expect(type.verb == verb) }
        for verb in [GuardianVerb.history, .mode, .watch, .setPIN] { #expect(GuardianServer.routes[verb]?.access == .guardian) }
        #expect(GuardianServer.routes[.ask]?.access == .protectedAccount)
        #expect(GuardianServer.routes[.analyze]?.access == .protectedAccount)
        for verb in [GuardianVerb.hello, .status, .list, .show, .release, .block, .purge, .watchList, .count, .reveal] { #expect(GuardianServer.routes[verb]?.access == .anyone) }
    }

    @Test("GuardianRules decides who may use what: each access for each caller")
    func rulesForEveryAccess() {
        for access in GuardianAccess.allCases {
            for caller in GuardianCaller.allCases {
                let allowed = GuardianRules.access(access, for: caller, protectedAccount: "kid") == .none
                switch access {
                case .anyone: #expect(allowed)
                case .protectedAccount: #expect(allowed == (caller == .protectedAccount))
                case .guardian: #expect(allowed == (caller == .guardian))
                }
            }
        }
        // Through the service a guardian needs no PIN; the child needs it in child mode (or cannot, without one set).
        for action in ProtectedAction.allCases {
            #expect(GuardianRules.approval(for: action, in: .child, pinIsSet: true, caller: .guardian) == .none)
            #expect(GuardianRules.approval(for: action, in: .child, pinIsSet: true, caller: .protectedAccount) == GuardianRules.approval(for: action, in: .child, pinIsSet: true))
        }
    }

    // MARK: - The wire

    @Test("typed errors: not a request, an unknown verb, another version, a malformed body, an unknown field each get their own error; a request without a version is read as version 1")
    func typedErrors() throws {
        let place = try Place(); defer { place.cleanUp() }
        func refusal(_ text: String, as uid: uid_t = Self.guardianUID) throws -> GuardianRefusal? {
            let socket = try place.rawConnection(as: uid)
            try socket.send(Array(text.utf8))
            let message = try #require(try socket.receive())
            return try GuardianProtocol.decodeAnswer(GuardianWire.Nothing.self, from: message.bytes).refusal
        }
        #expect(try refusal("hello") == .invalid(.notARequest("not a JSON object with a verb")))
        #expect(try refusal("[1,2]") == .invalid(.notARequest("not a JSON object with a verb")))
        #expect(try refusal(#"{"id":3}"#) == .invalid(.notARequest("no verb")))
        #expect(try refusal(#"{"verb":"formatDisk"}"#) == .invalid(.unknownVerb("formatDisk")))
        #expect(try refusal(#"{"verb":"list","version":2}"#) == .invalid(.unsupportedVersion(2)))
        #expect(try refusal(#"{"verb":"release","pin":"2468"}"#) == .invalid(.malformed(verb: .release, reason: "id is missing")))
        #expect(try refusal(#"{"verb":"show","id":"three"}"#) == .invalid(.malformed(verb: .show, reason: "id is not a Int64")))
        #expect(try refusal(#"{"verb":"mode"}"#) == .invalid(.malformed(verb: .mode, reason: "mode is missing")))
        #expect(try refusal(#"{"verb":"mode","mode":"toddler"}"#)?.description.hasPrefix("a mode request this service cannot read: mode") == true)
        // A field the verb does not have is refused, not ignored: a mistyped 'keep' would delete.
        let item = try place.item("kept.bin").id!
        #expect(try refusal(#"{"verb":"block","id":\#(item),"kep":true}"#) == .invalid(.malformed(verb: .block, reason: "it has no field 'kep'")))
        #expect(try place.vault.store.item(item)?.status == .quarantined)
        // Access is checked before the body is read: the child's malformed mode request is refused as the child's.
        #expect(try refusal(#"{"verb":"mode"}"#, as: Self.childUID) == .refused("only a guardian can do this (root, or a member of quarantine-guardians); ask a grown-up"))
        // What a hand-written client sends (no version) is served.
        let socket = try place.rawConnection(as: Self.childUID)
        try socket.send(Array(#"{"verb":"list","limit":5}"#.utf8))
        let answer = try GuardianProtocol.decodeAnswer(GuardianWire.List.Answer.self, from: try #require(try socket.receive()).bytes)
        #expect(answer.refusal == nil && answer.answer?.items.map(\.id) == [item] && answer.verb == .list)
        // The service still answers after all that.
        #expect(Self.outcome(try place.connect(as: Self.childUID), GuardianWire.Hello()) == nil)
    }

    @Test("wire values are not the database's records: an item carries no vault name, owner, mode or extended attributes; requests never use the envelope's keys")
    func wireValuesArePlain() throws {
        let place = try Place(); defer { place.cleanUp() }
        let stored = try place.item("plain.bin")
        let (listed, _) = try place.connect(as: Self.childUID).sendOne(GuardianWire.List())
        let item = try #require(listed.answer?.items.first)
        // The same values (the time in whole seconds: ISO 8601 on the wire).
        var expected = try #require(GuardianWire.Item(stored))
        #expect(abs(expected.createdAt.timeIntervalSince(item.createdAt)) < 1)
        expected.createdAt = item.createdAt
        #expect(item == expected)
        let object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(item)) as? [String: Any])
        for key in ["vaultName", "previewName", "uid", "gid", "mode", "extendedAttributes", "accessNanoseconds", "folderRealPath"] {
            #expect(object[key] == nil, "\(key) is on the wire")
        }
        // Every request type encodes its verb and the version beside its own fields, which never
        // take those names; and decodes from what it encodes.
        let samples: [any GuardianRequest] = [GuardianWire.Hello(), GuardianWire.Status(), GuardianWire.List(all: true, before: 9, limit: 3),
                                              GuardianWire.Show(id: 1, before: 2, limit: 3), GuardianWire.History(before: 4, limit: 5),
                                              GuardianWire.Release(id: 1, pin: "2468", to: "/tmp"), GuardianWire.Block(id: 1, pin: "2468", keep: true, origin: true),
                                              GuardianWire.Ask(id: 1), GuardianWire.Mode(mode: .adult, pin: "2468"), GuardianWire.SetPIN(pin: "2468", current: "1357"),
                                              GuardianWire.Watch(folder: "~/Music", outgoing: true, remove: true, pin: "2468"),
                                              GuardianWire.WatchList(), GuardianWire.Purge(olderThanDays: 3, dryRun: true, ids: [1, 2], pin: "2468"), GuardianWire.Count(),
                                              GuardianWire.Reveal(id: 1, pin: "2468"), GuardianWire.Analyze(kind: .video),
                                              GuardianWire.LiveStream(step: .begin, participant: "p", direction: .incoming)]
        #expect(Set(samples.map { type(of: $0).verb }) == Set(GuardianVerb.allCases))
        for sample in samples { try Self.roundTrip(sample) }
    }

    static func roundTrip<Request: GuardianRequest>(_ request: Request) throws {
        let bytes = GuardianProtocol.encode(request)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["verb"] as? String == Request.verb.rawValue && object["version"] as? Int == GuardianProtocol.version)
        let own = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(request)) as? [String: Any])
        #expect(own["verb"] == nil && own["version"] == nil, "\(Request.verb)'s fields use the envelope's keys")
        // Every field set in the samples: the fields it declares (any other is refused) are its own.
        #expect(Set(own.keys) == Request.fields, "\(Request.verb) declares \(Request.fields.sorted()), encodes \(own.keys.sorted())")
        #expect(try GuardianProtocol.verb(of: bytes) == Request.verb)
        #expect(GuardianProtocol.encode(try GuardianProtocol.decode(Request.self, from: bytes)) == bytes)
    }

    // MARK: - Descriptors

    @Test("a stranger is refused before anything is read: it gets the refusal, and the descriptors it queued are freed with the connection")
    func strangerRefusedUnread() throws {
        let place = try Place(); defer { place.cleanUp() }
        let pipe = try Self.pipeEnds(); defer { close(pipe.read) }
        let socket = try place.rawConnection(as: Self.strangerUID) { socket in
            try socket.send(GuardianProtocol.encode(GuardianWire.History()), descriptors: [Int32](repeating: pipe.write, count: 16))
        }
        close(pipe.write)
        // Closed with the request unread: the kernel reports the reset first, then the refusal
        // sent before the close can be read (GuardianClient reads it so).
        #expect(throws: ServiceError.self) { _ = try socket.receive() }
        let answer = try #require(try socket.receive())
        #expect(answer.descriptors.isEmpty)
        #expect(try GuardianProtocol.decodeAnswer(GuardianWire.Nothing.self, from: answer.bytes).refusal == .refused("this service protects kid; only kid, root and members of quarantine-guardians may use it"))
        #expect(Self.writeEndsAllClosed(pipe.read), "the 16 descriptors the stranger sent are still open somewhere")
    }

    @Test("the CLI's client reads a stranger's refusal whether the service closed before or after its request was sent")
    func clientReadsTheRefusal() throws {
        let place = try Place(); defer { place.cleanUp() }
        let words = "this service protects kid; only kid, root and members of quarantine-guardians may use it"
        // Refused before the client sent anything (its send fails with EPIPE).
        let early = GuardianClient(paths: GuardianPaths(user: "kid"), connected: try place.rawConnection(as: Self.strangerUID))
        Thread.sleep(forTimeInterval: 0.05)
        #expect(Self.outcome(early, GuardianWire.List()) == words)
        // Refused with the request queued (the read reports ECONNRESET first).
        let late = try place.rawConnection(as: Self.strangerUID) { try $0.send(GuardianProtocol.encode(GuardianWire.Hello())) }
        let client = GuardianClient(paths: GuardianPaths(user: "kid"), connected: late)
        #expect(client.reasonLeftBehind(GuardianWire.Nothing.self)?.refusal == .refused(words))
    }

    @Test("descriptors sent with a request by an admitted account are closed, and so is the connection; more than 16 (MSG_CTRUNC) are all closed too")
    func descriptorsFromAdmittedPeersAreClosed() throws {
        let place = try Place(); defer { place.cleanUp() }
        for count in [1, 16, 40] {
            let pipe = try Self.pipeEnds(); defer { close(pipe.read) }
            let socket = try place.rawConnection(as: Self.childUID)
            let sent = Self.sendRaw(socket.descriptor, GuardianProtocol.encode(GuardianWire.Hello()), descriptors: [Int32](repeating: pipe.write, count: count))
            #expect(sent > 0, "sendmsg with \(count) descriptors: errno \(errno)")
            close(pipe.write)
            #expect(Self.writeEndsAllClosed(pipe.read), "\(count) descriptors sent with a request were not all closed")
            let answer = try socket.receive()
            let refusal = answer.flatMap { try? GuardianProtocol.decodeAnswer(GuardianWire.Nothing.self, from: $0.bytes).refusal }
            #expect(refusal == .invalid(.tooLong(limit: GuardianProtocol.maxRequest)) || refusal == .invalid(.carriesDescriptors))
            #expect(try socket.receive() == nil, "the connection stays open after descriptors came with a request")
        }
        // The service still answers.
        #expect(Self.outcome(try place.connect(as: Self.childUID), GuardianWire.Hello()) == nil)
    }

    /// `sendmsg` with any number of descriptors (LocalSocket.send stops at 16; an attacker does not).
    static func sendRaw(_ socket: Int32, _ bytes: [UInt8], descriptors: [Int32]) -> Int {
        let headerSize = MemoryLayout<cmsghdr>.size
        let dataSize = descriptors.count * MemoryLayout<Int32>.size
        let space = headerSize + (dataSize + 7) / 8 * 8
        let control = UnsafeMutableRawPointer.allocate(byteCount: space, alignment: 8)
        defer { control.deallocate() }
        control.initializeMemory(as: UInt8.self, repeating: 0, count: space)
        let header = control.assumingMemoryBound(to: cmsghdr.self)
        header.pointee.cmsg_len = headerSize + dataSize
        header.pointee.cmsg_level = SOL_SOCKET
        header.pointee.cmsg_type = Int32(SCM_RIGHTS)
        descriptors.withUnsafeBytes { (control + headerSize).copyMemory(from: $0.baseAddress!, byteCount: dataSize) }
        var bytes = bytes
        return bytes.withUnsafeMutableBytes { raw in
            var io = iovec(iov_base: raw.baseAddress, iov_len: raw.count)
            return withUnsafeMutablePointer(to: &io) { io in
                var message = msghdr(msg_name: nil, msg_namelen: 0, msg_iov: io, msg_iovlen: 1, msg_control: control, msg_controllen: space, msg_flags: 0)
                return sendmsg(socket, &message, Int32(MSG_NOSIGNAL))
            }
        }
    }

    // MARK: - Limits

    @Test("a per-account cap: another account holding its 8 connections is refused a 9th, and the child, root and other guardians are still served")
    func perAccountCap() throws {
        let place = try Place(limits: .init(perAccount: 8, root: 16, shared: 12, handlers: 2)); defer { place.cleanUp() }
        let held = try (0..<8).map { _ in try place.connect(as: Self.guardianUID) }
        Thread.sleep(forTimeInterval: 0.1)
        let ninth = Self.outcome(try place.connect(as: Self.guardianUID), GuardianWire.Hello())
        #expect(ninth?.contains("too many connections") == true, "the 9th connection: \(ninth ?? "served")")
        // The shared room (12) is nearly full: 4 more are left for root and the other guardian together.
        let rootHeld = try (0..<4).map { _ in try place.connect(as: 0) }
        Thread.sleep(forTimeInterval: 0.1)
        let overShared = Self.outcome(try place.connect(as: Self.otherGuardianUID), GuardianWire.Hello())
        #expect(overShared?.contains("too many connections") == true, "over the shared cap: \(overShared ?? "served")")
        // The child's connections never wait for the others'.
        let childHeld = try (0..<8).map { _ in try place.connect(as: Self.childUID) }
        for client in childHeld { #expect(Self.outcome(client, GuardianWire.Hello()) == nil) }
        for client in rootHeld { #expect(Self.outcome(client, GuardianWire.Hello()) == nil) }
        for client in held { #expect(Self.outcome(client, GuardianWire.Hello()) == nil) }
        // Every connection is still open here: an optimised build may end a value's life at its
        // last use, and a client closes its socket when it goes (the count was 3 or 4, not 8).
        withExtendedLifetime((held, rootHeld, childHeld)) {
            #expect(place.server.state.withLock { $0.perUID[Self.guardianUID] } == 8)
        }
    }

    @Test("idle connections hold no handler: 2 handlers, 8 idle connections of the child, and a guardian's request is answered at once; idle ones are closed after the idle time")
    func idleConnectionsHoldNoThread() throws {
        let place = try Place(limits: .init(handlers: 2, idle: .milliseconds(400))); defer { place.cleanUp() }
        let idle = try (0..<8).map { _ in try place.rawConnection(as: Self.childUID) }
        let start = Date()
        #expect(Self.outcome(try place.connect(as: Self.guardianUID), GuardianWire.Hello()) == nil)
        #expect(Date().timeIntervalSince(start) < 0.3)
        Thread.sleep(forTimeInterval: 0.8)
        for socket in idle {
            try? socket.setTimeouts(receive: .seconds(1), send: .seconds(1))
            #expect(try socket.receive() == nil, "an idle connection was not closed")
        }
        #expect(place.server.state.withLock { $0.perUID[Self.childUID] } == nil)
    }

    @Test("a client that pipelines requests and never reads its answers is cut off after the send timeout; the others are served meanwhile")
    func slowReaderIsCutOff() throws {
        let place = try Place(limits: .init(handlers: 2, sendTimeout: .milliseconds(300))); defer { place.cleanUp() }
        for index in 0..<3000 { try place.vault.store.record(.guardian, mode: .child, actor: "test", detail: "event \(index) " + String(repeating: "x", count: 100)) }
        let flooder = try place.rawConnection(as: 0)
        for _ in 0..<40 { try flooder.send(GuardianProtocol.encode(GuardianWire.History(limit: 1000))) }
        Thread.sleep(forTimeInterval: 0.2)
        let start = Date()
        #expect(Self.outcome(try place.connect(as: Self.childUID), GuardianWire.Hello()) == nil)
        #expect(Date().timeIntervalSince(start) < 1)
        // The flooder's connection is closed once an answer could not be sent in time.
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, place.server.state.withLock({ $0.perUID[0] }) != nil { Thread.sleep(forTimeInterval: 0.05) }
        #expect(place.server.state.withLock { $0.perUID[0] } == nil, "the connection that never reads is still held")
    }

    @Test("the accept loop goes on after EMFILE, ENFILE, ENOMEM and ECONNABORTED: a later connection through the socket file is served")
    func acceptFailuresDoNotEndTheLoop() throws {
        let failures = Locked([EMFILE, ENFILE, ENOMEM, ECONNABORTED, ENOBUFS])
        let place = try Place(limits: .init(acceptBackoff: .milliseconds(20))) { listener in
            if let errno = failures.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return .failure(.init(errno: errno)) }
            return listener.acceptOrErrno()
        }
        defer { place.cleanUp() }
        // As root (this test's own uid): admitted. Through the real socket file.
        let socket = try LocalSocket.connect(to: place.folder.appendingPathComponent("kid.sock").path)
        let client = GuardianClient(paths: GuardianPaths(user: "kid"), connected: socket)
        try socket.setTimeouts(receive: .seconds(3), send: .seconds(3))
        #expect(Self.outcome(client, GuardianWire.Hello()) == nil)
        #expect(failures.withLock { $0.isEmpty })
    }

    // MARK: - Pages

    @Test("history of 5,000 events comes in pages under 64 KiB, and the client puts them together in order, none twice")
    func longHistoryInPages() throws {
        let place = try Place(); defer { place.cleanUp() }
        let item = try place.item("asked.bin").id!
        for index in 0..<5000 {
            try place.vault.store.record(.releaseRequested, itemId: index % 2 == 0 ? item : nil, mode: .child, actor: "kid", detail: "request \(index) " + String(repeating: "y", count: 40))
        }
        let client = try place.connect(as: Self.guardianUID)
        let (first, _) = try client.sendOne(GuardianWire.History())
        #expect(first.answer?.more == true && first.answer?.events.count == GuardianProtocol.defaultPage)
        let (history, _) = try client.send(GuardianWire.History())
        let ids = (history.answer?.events ?? []).map(\.id)
        #expect(ids.count >= 5001, "events: \(ids.count)")
        #expect(ids == ids.sorted(by: >) && Set(ids).count == ids.count)
        #expect(history.answer?.more == false)
        // One item's events (show), as the child: paged the same way, the preview only once.
        let (shown, preview) = try place.connect(as: Self.childUID).send(GuardianWire.Show(id: item))
        if let preview { close(preview) }
        #expect(shown.refusal == nil && (shown.answer?.events.count ?? 0) >= 2500 && shown.answer?.item.id == item)
        // A page asked for with a huge limit still fits one message.
        let (big, _) = try place.connect(as: 0).sendOne(GuardianWire.History(limit: 1_000_000))
        #expect(GuardianProtocol.encode(big).count <= GuardianProtocol.maxMessage && big.answer?.more == true)
    }

    @Test("the preview the child is shown goes on the allow list first: the copy its CLI writes to /tmp (watched) is never hidden as a new file")
    func previewBytesAllowed() throws {
        let place = try Place(); defer { place.cleanUp() }
        let file = place.downloads.appendingPathComponent("pic.bin")
        try Data("not a picture".utf8).write(to: file)
        let frame = RGBImage(width: 64, height: 64, filledWith: (200, 120, 90))
        let item = try place.vault.quarantine(path: file.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .child, actor: "test", preview: frame)
        let (shown, preview) = try place.connect(as: Self.childUID).send(GuardianWire.Show(id: item.id!))
        let fd = try #require(preview, "a preview was handed over")
        defer { close(fd) }
        #expect(shown.answer?.hasPreview == true)
        let sha256 = try Vault.sha256(fd: fd)
        #expect(try place.vault.store.isAllowed(sha256: sha256, in: .child))
    }

    @Test("list in pages: 120 items, 50 a page, all of them with their release requests")
    func listInPages() throws {
        let place = try Place(); defer { place.cleanUp() }
        let ids = try (0..<120).map { try place.item("item-\($0).bin").id! }
        let review = Review(vault: place.vault, mode: ModeInForce(mode: .child))
        try review.requestRelease(ids[3])
        try review.requestRelease(ids[110])
        let (answer, _) = try place.connect(as: Self.childUID).send(GuardianWire.List(limit: 50))
        #expect((answer.answer?.items ?? []).map(\.id) == ids.reversed())
        #expect(Set((answer.answer?.requests ?? [:]).keys) == [ids[3], ids[110]])
    }

    @Test("a file found through the unit's side path of the host's /tmp is named /tmp/... in the list and the history")
    func sidePathsNamedAsPeopleKnowThem() throws {
        let place = try Place(sharedFolders: { [SharedFolder(path: "/tmp", reachedAt: $0.appendingPathComponent("host-tmp").path)] })
        defer { place.cleanUp() }
        let side = place.folder.appendingPathComponent("host-tmp")
        try FileManager.default.createDirectory(at: side, withIntermediateDirectories: true)
        try Data("not a picture".utf8).write(to: side.appendingPathComponent("card.png"))
        let item = try place.vault.quarantine(path: side.appendingPathComponent("card.png").path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .child, actor: "test")
        #expect(item.originalPath.hasPrefix(side.path), "recorded as the service reached it")
        let guardian = try place.connect(as: Self.guardianUID)
        let (list, _) = try guardian.send(GuardianWire.List())
        #expect(list.answer?.items.map(\.originalPath) == ["/tmp/card.png"])
        let (history, _) = try guardian.send(GuardianWire.History())
        let paths = (history.answer?.events ?? []).compactMap(\.path)
        #expect(!paths.isEmpty && paths.allSatisfy { $0 == "/tmp/card.png" }, "\(paths)")
    }

    // MARK: - Lookups

    @Test("account lookups from many threads at once give consistent answers (getpwuid_r, getgrnam_r, getgrouplist)")
    func lookupsAreThreadSafe() async {
        let root = AccountLookup.account(uid: 0)
        #expect(root?.name == "root" && root?.home == "/root")
        #expect(AccountLookup.groupID(named: "root") == 0)
        #expect(AccountLookup.isMember(uid: 0, ofGroup: "root"))
        #expect(!AccountLookup.isMember(uid: 0, ofGroup: "no-such-group-here"))
        let names = await withTaskGroup(of: String?.self) { group in
            for index in 0..<64 { group.addTask { AccountLookup.account(uid: index % 2 == 0 ? 0 : 65534)?.name } }
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(Set(names.compactMap { $0 }).isSubset(of: ["root", "nobody"]) && names.count == 64)
    }

    // MARK: - The unit

    @Test("the unit's LimitNOFILE and TasksMax leave room for what the socket can hold at most (connections, handlers, their descriptors)")
    func unitLimitsFitTheSocket() throws {
        let lines = GuardianUnit.unitText.split(separator: "\n")
        let files = try #require(lines.first { $0.hasPrefix("LimitNOFILE=") }.flatMap { Int($0.dropFirst("LimitNOFILE=".count)) })
        let tasks = try #require(lines.first { $0.hasPrefix("TasksMax=") }.flatMap { Int($0.dropFirst("TasksMax=".count)) })
        let limits = GuardianServer.Limits()
        #expect(limits.maxConnections == 56)
        // Connections, 16 descriptors and a preview per handler, the listener and the wake-up pipe.
        let socket = limits.maxConnections + limits.handlers * (LocalSocket.maxDescriptors + 1) + 3
        #expect(socket * 4 < files, "the socket alone may hold \(socket) descriptors; LimitNOFILE=\(files)")
        // The socket's threads are fixed (a loop and the handlers): at most an eighth of the tasks.
        #expect((1 + limits.handlers) * 8 <= tasks, "socket threads \(1 + limits.handlers), TasksMax=\(tasks)")
    }
}
