import Foundation
import QuarantineAgent
@testable import GuardianAPI
import Locking
import Logging
import QuarantineCore
import QuarantineStore
import ServiceSupport
import Testing
@testable import GuardianService

/// The guardian service's socket, served in process: a real vault and database in a fresh folder,
/// a server listening in that folder, and connections made as any account (one end of a socket
/// pair handed to the server with the peer the test names, as the kernel would name it).
@Suite("GuardianServer")
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
             sharedFolders: (URL) -> [SharedFolder] = { _ in [] }) throws {
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
                                        accepting: accepting ?? { $0.acceptOrErrno() }, sharedFolders: sharedFolders(folder), reload: {})
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
    static func outcome(_ client: GuardianClient, _ request: GuardianRequest) -> String? {
        do {
            let (answer, preview) = try client.send(request)
            if let preview { close(preview) }
            switch answer.refusal {
            case nil: return nil
            case .refused(let words): return words
            case .wrongPIN: return "wrong PIN"
            case .waitForPIN: return "wait for PIN"
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
        try GuardianPIN(store: place.vault.store).set("2468")
        let roles: [(String, uid_t)] = [("child", Self.childUID), ("guardian", Self.guardianUID), ("root", 0), ("stranger", Self.strangerUID)]
        let onlyGuardian = "only a guardian can do this"
        let strangerWords = "only kid, root and members of quarantine-guardians may use it"
        for (name, uid) in roles {
            let release = try place.item("\(name)-release.bin").id!
            let block = try place.item("\(name)-block.bin").id!
            let asked = try place.item("\(name)-ask.bin").id!
            let requests: [(String, GuardianRequest)] = [
                ("hello", GuardianRequest(.hello)), ("status", GuardianRequest(.status)), ("list", GuardianRequest(.list)),
                ("show", GuardianRequest(.show, id: release)), ("history", GuardianRequest(.history)),
                ("mode (show)", GuardianRequest(.mode)), ("ask", GuardianRequest(.ask, id: asked)),
                ("release", GuardianRequest(.release, id: release)), ("block", GuardianRequest(.block, id: block)),
                ("mode (change)", GuardianRequest(.mode, mode: .adult)), ("watch", GuardianRequest(.watch, folder: "Music")),
                ("setPIN", GuardianRequest(.setPIN, pin: "2468")),
            ]
            for (verb, request) in requests {
                // A connection each: a stranger's is closed after its refusal.
                let got = Self.outcome(try place.connect(as: uid), request)
                let wanted: String?
                switch (name, verb) {
                case ("stranger", _): wanted = strangerWords
                case ("child", "history"), ("child", "mode (change)"), ("child", "watch"), ("child", "setPIN"): wanted = onlyGuardian
                case ("child", "release"), ("child", "block"): wanted = "wrong PIN"   // the core's consent: no PIN given
                case (_, "ask") where name != "child": wanted = "only kid can do this"
                default: wanted = nil
                }
                if let wanted {
                    #expect(got?.contains(wanted) == true, "\(name) \(verb): wanted a refusal with '\(wanted)', got \(got ?? "served")")
                } else {
                    #expect(got == nil, "\(name) \(verb): wanted it served, got \(got ?? "")")
                }
                // The mode change is undone for the next role.
                if verb == "mode (change)" && got == nil { _ = Self.outcome(try place.connect(as: 0), GuardianRequest(.mode, mode: .child)) }
            }
        }
    }

    @Test("the route table declares every verb once, with the access the issue asks (history, mode, watch, set-pin: guardians; ask: the child)")
    func routeTableCoversEveryVerb() {
        let verbs: [GuardianRequest.Verb] = [.hello, .list, .show, .history, .release, .block, .ask, .mode, .setPIN, .status, .watch]
        #expect(Set(GuardianServer.routes.keys) == Set(verbs))
        for verb in [GuardianRequest.Verb.history, .mode, .watch, .setPIN] { #expect(GuardianServer.routes[verb]?.access == .guardian) }
        #expect(GuardianServer.routes[.ask]?.access == .child)
        #expect(GuardianServer.routeVerb(of: GuardianRequest(.mode)) == .hello)
        #expect(GuardianServer.routeVerb(of: GuardianRequest(.mode, mode: .adult)) == .mode)
    }

    // MARK: - Descriptors

    @Test("a stranger is refused before anything is read: it gets the refusal, and the descriptors it queued are freed with the connection")
    func strangerRefusedUnread() throws {
        let place = try Place(); defer { place.cleanUp() }
        let pipe = try Self.pipeEnds(); defer { close(pipe.read) }
        let socket = try place.rawConnection(as: Self.strangerUID) { socket in
            try socket.send(GuardianRequest(.history).encoded(), descriptors: [Int32](repeating: pipe.write, count: 16))
        }
        close(pipe.write)
        // Closed with the request unread: the kernel reports the reset first, then the refusal
        // sent before the close can be read (GuardianClient reads it so).
        #expect(throws: ServiceError.self) { _ = try socket.receive() }
        let answer = try #require(try socket.receive())
        #expect(answer.descriptors.isEmpty)
        #expect(try GuardianResponse.decode(answer.bytes).refusal == .refused("this service protects kid; only kid, root and members of quarantine-guardians may use it"))
        #expect(Self.writeEndsAllClosed(pipe.read), "the 16 descriptors the stranger sent are still open somewhere")
    }

    @Test("the CLI's client reads a stranger's refusal whether the service closed before or after its request was sent")
    func clientReadsTheRefusal() throws {
        let place = try Place(); defer { place.cleanUp() }
        let words = "this service protects kid; only kid, root and members of quarantine-guardians may use it"
        // Refused before the client sent anything (its send fails with EPIPE).
        let early = GuardianClient(paths: GuardianPaths(user: "kid"), connected: try place.rawConnection(as: Self.strangerUID))
        Thread.sleep(forTimeInterval: 0.05)
        #expect(Self.outcome(early, GuardianRequest(.list)) == words)
        // Refused with the request queued (the read reports ECONNRESET first).
        let late = try place.rawConnection(as: Self.strangerUID) { try $0.send(GuardianRequest(.hello).encoded()) }
        let client = GuardianClient(paths: GuardianPaths(user: "kid"), connected: late)
        #expect(client.reasonLeftBehind()?.refusal == .refused(words))
    }

    @Test("descriptors sent with a request by an admitted account are closed, and so is the connection; more than 16 (MSG_CTRUNC) are all closed too")
    func descriptorsFromAdmittedPeersAreClosed() throws {
        let place = try Place(); defer { place.cleanUp() }
        for count in [1, 16, 40] {
            let pipe = try Self.pipeEnds(); defer { close(pipe.read) }
            let socket = try place.rawConnection(as: Self.childUID)
            let sent = Self.sendRaw(socket.descriptor, GuardianRequest(.hello).encoded(), descriptors: [Int32](repeating: pipe.write, count: count))
            #expect(sent > 0, "sendmsg with \(count) descriptors: errno \(errno)")
            close(pipe.write)
            #expect(Self.writeEndsAllClosed(pipe.read), "\(count) descriptors sent with a request were not all closed")
            let answer = try socket.receive()
            #expect(answer.map { try? GuardianResponse.decode($0.bytes).refusal } == .refused("a request is at most \(GuardianProtocol.maxRequest) bytes, with no descriptors")
                    || answer.map { try? GuardianResponse.decode($0.bytes).refusal } == .refused("requests carry no descriptors"))
            #expect(try socket.receive() == nil, "the connection stays open after descriptors came with a request")
        }
        // The service still answers.
        #expect(Self.outcome(try place.connect(as: Self.childUID), GuardianRequest(.hello)) == nil)
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
        let ninth = Self.outcome(try place.connect(as: Self.guardianUID), GuardianRequest(.hello))
        #expect(ninth?.contains("too many connections") == true, "the 9th connection: \(ninth ?? "served")")
        // The shared room (12) is nearly full: 4 more are left for root and the other guardian together.
        let rootHeld = try (0..<4).map { _ in try place.connect(as: 0) }
        Thread.sleep(forTimeInterval: 0.1)
        let overShared = Self.outcome(try place.connect(as: Self.otherGuardianUID), GuardianRequest(.hello))
        #expect(overShared?.contains("too many connections") == true, "over the shared cap: \(overShared ?? "served")")
        // The child's connections never wait for the others'.
        let childHeld = try (0..<8).map { _ in try place.connect(as: Self.childUID) }
        for client in childHeld { #expect(Self.outcome(client, GuardianRequest(.hello)) == nil) }
        for client in rootHeld { #expect(Self.outcome(client, GuardianRequest(.hello)) == nil) }
        for client in held { #expect(Self.outcome(client, GuardianRequest(.hello)) == nil) }
        #expect(place.server.state.withLock { $0.perUID[Self.guardianUID] } == 8)
    }

    @Test("idle connections hold no handler: 2 handlers, 8 idle connections of the child, and a guardian's request is answered at once; idle ones are closed after the idle time")
    func idleConnectionsHoldNoThread() throws {
        let place = try Place(limits: .init(handlers: 2, idle: .milliseconds(400))); defer { place.cleanUp() }
        let idle = try (0..<8).map { _ in try place.rawConnection(as: Self.childUID) }
        let start = Date()
        #expect(Self.outcome(try place.connect(as: Self.guardianUID), GuardianRequest(.hello)) == nil)
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
        for _ in 0..<40 { try flooder.send(GuardianRequest(.history, limit: 1000).encoded()) }
        Thread.sleep(forTimeInterval: 0.2)
        let start = Date()
        #expect(Self.outcome(try place.connect(as: Self.childUID), GuardianRequest(.hello)) == nil)
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
        #expect(Self.outcome(client, GuardianRequest(.hello)) == nil)
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
        let (first, _) = try client.sendOne(GuardianRequest(.history))
        #expect(first.more == true && first.events?.count == GuardianProtocol.defaultPage)
        let (history, _) = try client.send(GuardianRequest(.history))
        let ids = (history.events ?? []).compactMap(\.id)
        #expect(ids.count >= 5001, "events: \(ids.count)")
        #expect(ids == ids.sorted(by: >) && Set(ids).count == ids.count)
        #expect(history.more == false)
        // One item's events (show), as the child: paged the same way, the preview only once.
        let (shown, preview) = try place.connect(as: Self.childUID).send(GuardianRequest(.show, id: item))
        if let preview { close(preview) }
        #expect(shown.refusal == nil && (shown.events?.count ?? 0) >= 2500 && shown.items?.count == 1)
        // A page asked for with a huge limit still fits one message.
        let (big, _) = try place.connect(as: 0).sendOne(GuardianRequest(.history, limit: 1_000_000))
        #expect(big.encoded().count <= GuardianProtocol.maxMessage && big.more == true)
    }

    @Test("list in pages: 120 items, 50 a page, all of them with their release requests")
    func listInPages() throws {
        let place = try Place(); defer { place.cleanUp() }
        let ids = try (0..<120).map { try place.item("item-\($0).bin").id! }
        let review = Review(vault: place.vault, mode: ModeInForce(mode: .child))
        try review.requestRelease(ids[3])
        try review.requestRelease(ids[110])
        let (answer, _) = try place.connect(as: Self.childUID).send(GuardianRequest(.list, limit: 50))
        #expect((answer.items ?? []).compactMap(\.id) == ids.reversed())
        #expect(Set((answer.requests ?? [:]).keys) == [ids[3], ids[110]])
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
        let (list, _) = try guardian.send(GuardianRequest(.list))
        #expect(list.items?.map(\.originalPath) == ["/tmp/card.png"])
        let (history, _) = try guardian.send(GuardianRequest(.history))
        let paths = (history.events ?? []).compactMap(\.path)
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
