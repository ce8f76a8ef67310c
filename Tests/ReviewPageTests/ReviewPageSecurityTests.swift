import Foundation
import GuardianAPI
import MediaDecoding
import Logging
import QuarantineBackend
import QuarantineCore
@testable import QuarantineStore
import ReviewPage
import ServiceSupport
import Testing
import TestSupport
@testable import GuardianService

/// The review page's server on a random loopback port, in process, over a vault in a fresh
/// folder: what it refuses (no secret, a wrong Host, a foreign Origin, no CSRF token, an
/// original before Show) and what the core still decides through it (the PIN in child mode).
@Suite("Review page: the security checks")
struct ReviewPageSecurityTests {
    static let childUID: uid_t = 42_540
    static let guardianUID: uid_t = 42_550

    /// A vault, a configuration and a running page over them.
    final class Place: @unchecked Sendable {
        let folder: URL
        let vault: Vault
        let configuration: URL
        var server: ReviewServer!
        var address: ReviewServer.Address!
        var task: Task<Void, Error>?
        var guardianServer: GuardianServer?

        init(mode: String = "adult", pin: String? = nil) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-review-\(UUID().uuidString)")
            for sub in ["home/Downloads", "state", "run"] {
                try FileManager.default.createDirectory(at: folder.appendingPathComponent(sub), withIntermediateDirectories: true)
            }
            configuration = folder.appendingPathComponent("config.toml")
            try Data("mode = \"\(mode)\"\n".utf8).write(to: configuration)
            vault = try Vault(root: folder.appendingPathComponent("state/vault").path,
                              store: AuditStore(path: folder.appendingPathComponent("state/audit.sqlite3").path))
            if let pin { try GuardianPIN(store: vault.store).set(pin, rounds: GuardianPIN.testRounds) }
            if mode == "child" { try vault.store.recordMode(.child, from: .adult, actor: "test") }
        }

        var environment: [String: String] {
            ["HOME": folder.appendingPathComponent("home").path, "XDG_RUNTIME_DIR": folder.appendingPathComponent("run").path,
             "XDG_CONFIG_HOME": folder.appendingPathComponent("no-config").path]
        }

        var local: any QuarantineBackend {
            let vault = vault
            return LocalBackend(account: "me", configurationPath: configuration.path, environment: environment, openVault: { _ in vault })
        }

        /// A guardian service over this vault (the child's account "kid"), and its backend for `uid`.
        func socket(as uid: uid_t) throws -> any QuarantineBackend {
            if guardianServer == nil {
                let guardian = ReviewPageSecurityTests.guardianUID
                let server = try GuardianServer(paths: GuardianPaths(user: "kid"), childUID: ReviewPageSecurityTests.childUID, home: folder.appendingPathComponent("home").path,
                                                vault: vault, configurationPath: configuration.path, logger: Logger(label: "test"),
                                                socketPath: folder.appendingPathComponent("kid.sock").path, guardianCheck: { $0 == guardian }, reload: {})
                server.start()
                guardianServer = server
            }
            let (mine, theirs) = try LocalSocket.pair()
            guardianServer!.admit(theirs, peer: LocalSocket.Peer(pid: 1, uid: uid, gid: uid))
            return SocketBackend(client: GuardianClient(paths: GuardianPaths(user: "kid"), connected: mine))
        }

        /// Starts the page over `backend`; returns once it listens.
        func start(_ backend: any QuarantineBackend, idle: TimeInterval = 120) async throws {
            let state = try ReviewOptions.stateFolder(environment: environment)
            var options = ReviewOptions(own: backend, idleTimeout: idle, stateFolder: state)
            options.handlesSignals = false
            let server = ReviewServer(options: options)
            self.server = server
            let (stream, continuation) = AsyncStream<ReviewServer.Address>.makeStream()
            task = Task { try await server.run { continuation.yield($0) } }
            for await address in stream { self.address = address; break }
        }

        /// A flagged item: a small PNG-looking file moved into the vault.
        func item(_ name: String = "card.png") throws -> VaultItem {
            let file = folder.appendingPathComponent("home/Downloads/\(name)")
            try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array("original bytes of \(name)".utf8)).write(to: file)
            return try vault.quarantine(path: file.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .adult, actor: "test")
        }

        /// Runs `body`, then stops everything and removes the folder (also when `body` throws).
        func use(_ body: (Place) async throws -> Void) async throws {
            do { try await body(self) } catch {
                await stop()
                throw error
            }
            await stop()
        }

        func stop() async {
            server?.stop()
            _ = try? await task?.value
            guardianServer?.stop()
            _ = guardianServer?.waitUntilStopped()
            try? FileManager.default.removeItem(at: folder)
        }

        var port: Int { address.port }
        var secret: String { String(address.url.split(separator: "=").last!) }
        var cookie: String { "quarantine_review_\(port)=\(secret)" }
        var origin: String { "http://127.0.0.1:\(port)" }

        func send(_ method: String, _ path: String, host: String? = "default", headers: [String: String] = [:], body: String? = nil) async throws -> RawHTTP.Answer {
            let port = port
            return try await offPool { try RawHTTP.send(port: port, method, path, host: host, headers: headers, body: body) }
        }

        /// The CSRF token of this start, as the page's forms carry it.
        func csrf(from path: String = "/") async throws -> String {
            let page = try await send("GET", path, headers: ["Cookie": cookie]).text
            let marker = "name=\"csrf\" value=\""
            guard let start = page.range(of: marker) else { throw RawHTTP.Failure(description: "no form on the page: \(page)") }
            return String(page[start.upperBound...].prefix { $0 != "\"" })
        }

        /// A POST as the page's own form sends it.
        func post(_ path: String, _ fields: String, csrf: String?, origin: String? = nil, cookie: String? = nil) async throws -> RawHTTP.Answer {
            var body = fields
            if let csrf { body += (body.isEmpty ? "" : "&") + "csrf=\(csrf)" }
            return try await send("POST", path, headers: ["Cookie": cookie ?? self.cookie, "Origin": origin ?? self.origin, "Sec-Fetch-Site": "same-origin"], body: body)
        }
    }

    @Test("only the person gets in: the secret once (then an HttpOnly SameSite=Strict cookie, and a redirect without it); no secret, a wrong one, a wrong Host are refused; every answer carries the strict headers")
    func secretCookieAndHost() async throws {
        let place = try Place()
        try await place.use { place in
            try await place.start(place.local)
            // The address file: 0600, this start's URL.
            var info = stat()
            #expect(lstat(place.address.file, &info) == 0 && info.st_mode & 0o777 == 0o600)
            #expect(try String(contentsOfFile: place.address.file, encoding: .utf8).contains(place.address.url))
            // No secret, a wrong secret, a cookie of another start.
            #expect(try await place.send("GET", "/").status == 403)
            #expect(try await place.send("GET", "/?token=" + String(repeating: "0", count: 64)).status == 403)
            #expect(try await place.send("GET", "/", headers: ["Cookie": "quarantine_review_\(place.port)=\(ReviewGate.randomToken())"]).status == 403)
            #expect(try await place.send("GET", "/preview/1").status == 403)
            // The secret: a cookie and a page of the server's own that moves on to the address
            // without it (a redirect would not carry a SameSite=Strict cookie when the launcher
            // file, a cross-site start, opened it).
            let first = try await place.send("GET", "/item/3?token=\(place.secret)")
            #expect(first.status == 200 && first.headers["location"] == nil)
            #expect(first.text.contains(#"<meta http-equiv="refresh" content="0;url=/item/3">"#) && !first.text.contains(place.secret))
            let cookie = try #require(first.headers["set-cookie"])
            #expect(cookie.hasPrefix(place.cookie + ";") && cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
            // With the cookie: served, with the strict headers.
            let page = try await place.send("GET", "/", headers: ["Cookie": place.cookie])
            #expect(page.status == 200 && page.text.contains("The vault is empty"))
            for answer in [page, first, try await place.send("GET", "/")] {
                #expect(answer.headers["content-security-policy"]?.contains("default-src 'none'") == true)
                #expect(answer.headers["content-security-policy"]?.contains("frame-ancestors 'none'") == true)
                #expect(answer.headers["x-content-type-options"] == "nosniff" && answer.headers["referrer-policy"] == "no-referrer")
            }
            // Another Host (DNS rebinding: evil.example resolving to 127.0.0.1), another port, none.
            #expect(try await place.send("GET", "/", host: "evil.example:\(place.port)", headers: ["Cookie": place.cookie]).status == 421)
            #expect(try await place.send("GET", "/", host: "127.0.0.1:1", headers: ["Cookie": place.cookie]).status == 421)
            #expect(try await place.send("GET", "/", host: "localhost:\(place.port)", headers: ["Cookie": place.cookie]).status == 200)
            #expect(try await place.send("PUT", "/", headers: ["Cookie": place.cookie]).status == 405)
        }
    }

    @Test("an action needs this page's Origin and CSRF token: a foreign Origin, no Origin, no or a wrong token, no cookie are refused and nothing changes; the page's own form is served")
    func originAndCSRF() async throws {
        let place = try Place()
        try await place.use { place in
            try await place.start(place.local)
            let item = try place.item()
            let id = try #require(item.id)
            let csrf = try await place.csrf()
            #expect(try await place.post("/delete/\(id)", "", csrf: csrf, origin: "http://evil.example").status == 403)
            #expect(try await place.send("POST", "/delete/\(id)", headers: ["Cookie": place.cookie], body: "csrf=\(csrf)").status == 403, "no Origin")
            #expect(try await place.send("POST", "/delete/\(id)", headers: ["Cookie": place.cookie, "Origin": place.origin, "Sec-Fetch-Site": "cross-site"], body: "csrf=\(csrf)").status == 403)
            // Origin: null (what a browser sends under Referrer-Policy: no-referrer) only with the browser's own Sec-Fetch-Site: same-origin.
            #expect(try await place.send("POST", "/delete/\(id)", headers: ["Cookie": place.cookie, "Origin": "null"], body: "csrf=\(csrf)").status == 403)
            #expect(try await place.send("POST", "/delete/\(id)", headers: ["Cookie": place.cookie, "Origin": "null", "Sec-Fetch-Site": "cross-site"], body: "csrf=\(csrf)").status == 403)
            #expect(try await place.post("/delete/\(id)", "", csrf: nil).status == 403, "no CSRF token")
            #expect(try await place.post("/delete/\(id)", "", csrf: ReviewGate.randomToken()).status == 403, "a wrong CSRF token")
            #expect(try await place.post("/delete/\(id)", "", csrf: csrf, cookie: "quarantine_review_\(place.port)=x").status == 403, "no secret")
            #expect(try place.vault.store.item(id)?.status == .quarantined, "a refused request changed something")
            // The page's own form: deleted, as 'quarantine block' does.
            let done = try await place.post("/delete/\(id)", "", csrf: csrf)
            #expect(done.status == 303)
            #expect(try place.vault.store.item(id)?.status == .blocked)
        }
    }

    @Test("no original before Show: refused, then Show (a POST with the token) serves that item's bytes only, recorded in the audit log; Hide again refuses it again")
    func originalOnlyAfterShow() async throws {
        let place = try Place()
        try await place.use { place in
            try await place.start(place.local)
            let shown = try #require(try place.item("shown.png").id), other = try #require(try place.item("other.png").id)
            let headers = ["Cookie": place.cookie]
            #expect(try await place.send("GET", "/original/\(shown)", headers: headers).status == 403)
            let csrf = try await place.csrf()
            #expect(try await place.post("/show/\(shown)", "", csrf: nil).status == 403, "Show without the token")
            #expect(try await place.send("GET", "/original/\(shown)", headers: headers).status == 403)
            #expect(try await place.post("/show/\(shown)", "", csrf: csrf).status == 303)
            let original = try await place.send("GET", "/original/\(shown)", headers: headers)
            #expect(original.status == 200 && original.headers["content-type"] == "image/png")
            #expect(original.text.hasSuffix("original bytes of shown.png"))
            #expect(try await place.send("GET", "/original/\(other)", headers: headers).status == 403, "another item's original")
            #expect(try await place.send("GET", "/original/\(shown)").status == 403, "without the cookie")
            let page = try await place.send("GET", "/", headers: headers).text
            #expect(page.contains("src=\"/original/\(shown)\"") && !page.contains("src=\"/original/\(other)\""))
            #expect(try place.vault.store.events(itemId: shown).contains { $0.kind == .shown })
            #expect(try await place.post("/hide/\(shown)", "", csrf: csrf).status == 303)
            #expect(try await place.send("GET", "/original/\(shown)", headers: headers).status == 403)
        }
    }

    @Test("a grid's previews asked for at once through one guardian connection each get their own item's answer")
    func concurrentRequestsThroughTheSocket() async throws {
        let place = try Place(mode: "child", pin: "2468")
        try await place.use { place in
            try await place.start(try place.socket(as: Self.childUID))
            var ids: [Int64] = []
            for index in 0..<4 {
                let item = try place.item("card-\(index).png")
                _ = try place.vault.attachPreview(RGBImage(width: 64, height: 64, filledWith: (UInt8(index * 60), 90, 200)), to: item.id!)
                ids.append(item.id!)
            }
            let cookie = place.cookie, port = place.port
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for round in 0..<24 {
                    let id = ids[round % ids.count]
                    group.addTask { try await offPool { try RawHTTP.send(port: port, "GET", round % 2 == 0 ? "/preview/\(id)" : "/item/\(id)?pane=2", headers: ["Cookie": cookie]).status } }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        }
    }

    @Test("a video is shown in place in a <video controls>, its original served in the parts the player asks for (Range)")
    func videoInPlace() async throws {
        let place = try Place()
        try await place.use { place in
            try await place.start(place.local)
            let file = place.folder.appendingPathComponent("home/Downloads/clip.mp4")
            let bytes: [UInt8] = [0, 0, 0, 0x18] + Array("ftypisom".utf8) + [UInt8](repeating: 7, count: 100)
            try Data(bytes).write(to: file)
            let id = try #require(try place.vault.quarantine(path: file.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .adult, actor: "test").id)
            let csrf = try await place.csrf()
            #expect(try await place.post("/show/\(id)", "", csrf: csrf).status == 303)
            let page = try await place.send("GET", "/", headers: ["Cookie": place.cookie]).text
            #expect(page.contains("<video controls") && page.contains("src=\"/original/\(id)\""))
            let part = try await place.send("GET", "/original/\(id)", headers: ["Cookie": place.cookie, "Range": "bytes=4-11"])
            #expect(part.status == 206 && part.headers["content-range"] == "bytes 4-11/\(bytes.count)" && part.text == "ftypisom")
            let whole = try await place.send("GET", "/original/\(id)", headers: ["Cookie": place.cookie])
            #expect(whole.status == 200 && whole.headers["content-type"] == "video/mp4" && whole.body == bytes)
        }
    }

    @Test("child mode (locally, and a protected child through the guardian socket): Show without the PIN or with a wrong one is refused and the wrong PIN is rate-limited by the core; the PIN shows it; a guardian needs none")
    func childNeedsThePIN() async throws {
        for throughSocket in [false, true] {
            let place = try Place(mode: "child", pin: "2468")
            try await place.start(throughSocket ? try place.socket(as: Self.childUID) : place.local)
            let id = try #require(try place.item().id)
            let headers = ["Cookie": place.cookie]
            let csrf = try await place.csrf(from: "/item/\(id)?pane=2")
            let pane1 = try await place.send("GET", "/item/\(id)", headers: headers).text
            #expect(pane1.contains("Not now") && pane1.contains("I'm sure") && !pane1.contains("name=\"pin\""))
            let pane2 = try await place.send("GET", "/item/\(id)?pane=2", headers: headers).text
            #expect(pane2.contains("Message a grown-up") && pane2.contains("Get help") && pane2.contains("name=\"pin\""))
            #expect(try await place.post("/show/\(id)", "back=item", csrf: csrf).status == 403, "no PIN")
            #expect(try await place.send("GET", "/original/\(id)", headers: headers).status == 403)
            let wrong = try await place.post("/show/\(id)", "back=item&pin=1111", csrf: csrf)
            #expect(wrong.status == 403 && wrong.text.contains("That PIN is not right"))
            // The core's limit: after a few wrong PINs even the right one waits.
            var limited = false
            for _ in 0..<6 where !limited {
                let answer = try await place.post("/show/\(id)", "back=item&pin=1111", csrf: csrf)
                limited = answer.status == 429 || answer.text.contains("must wait") || answer.text.contains("Too many")
            }
            #expect(limited, "wrong PINs are not rate-limited (\(throughSocket ? "socket" : "local"))")
            #expect(try await place.send("GET", "/original/\(id)", headers: headers).status == 403)
            // The request for a grown-up is recorded.
            #expect(try await place.post("/ask/\(id)", "", csrf: csrf).status == 303)
            #expect(try place.vault.store.openReleaseRequests()[id] != nil)
            await place.stop()
        }
        // A fresh vault: the right PIN shows it; a guardian through the socket needs none.
        let place = try Place(mode: "child", pin: "2468")
        try await place.use { place in
            try await place.start(try place.socket(as: Self.childUID))
            let id = try #require(try place.item().id)
            let csrf = try await place.csrf(from: "/item/\(id)?pane=2")
            #expect(try await place.post("/show/\(id)", "back=item&pin=2468", csrf: csrf).status == 303)
            #expect(try await place.send("GET", "/original/\(id)", headers: ["Cookie": place.cookie]).status == 200)
            let guardian = try place.socket(as: Self.guardianUID)
            let reply = try guardian.send(GuardianWire.Reveal(id: id))
            #expect(reply.preview != nil)
            if let fd = reply.preview { close(fd) }
        }
    }

    @Test("a running page is found by its address file, and its launcher at an item is a 0600 page (the secret on no command line); none once the page stopped")
    func runningPageLauncher() async throws {
        let place = try Place()
        let folder = try ReviewPageAddress.folder(environment: place.environment)
        #expect(ReviewPageAddress.running(in: folder) == nil, "no page runs yet")
        try await place.start(place.local)
        let running = try #require(ReviewPageAddress.running(in: folder))
        let launcher = try #require(ReviewPageAddress.launcher(for: ReviewPageAddress.address(running.url, at: "/item/5"), in: folder))
        var info = stat()
        #expect(lstat(launcher, &info) == 0 && info.st_mode & 0o777 == 0o600 && info.st_uid == geteuid())
        let page = try String(contentsOfFile: launcher, encoding: .utf8)
        #expect(page.contains("http://127.0.0.1:\(place.port)/item/5?token=\(place.secret)"))
        // What the launcher leads to: the secret sets the cookie, then the item's place.
        let first = try await place.send("GET", "/item/5?token=\(place.secret)")
        #expect(first.status == 200 && first.text.contains("url=/item/5\""))
        place.server.stop()
        try await place.task?.value
        #expect(ReviewPageAddress.running(in: folder) == nil, "the page stopped")
        await place.stop()
    }

    @Test("the server stops by itself after the idle time and removes its address file")
    func stopsWhenIdle() async throws {
        let place = try Place()
        try await place.use { place in
            let started = Date()
            try await place.start(place.local, idle: 1)
            #expect(FileManager.default.fileExists(atPath: place.address.file))
            try await place.task?.value
            #expect(Date().timeIntervalSince(started) < 10)
            #expect(!FileManager.default.fileExists(atPath: place.address.file))
            #expect(throws: (any Error).self) { try RawHTTP.send(port: place.port, "GET", "/") }
        }
    }

    @Test("refused requests (another account without the secret) do not keep the page alive")
    func refusedRequestsDoNotKeepItAlive() async throws {
        let place = try Place()
        try await place.use { place in
            try await place.start(place.local, idle: 1.5)
            let up = Date()
            let port = place.port
            // Requests without the secret every 0.3 s, for up to 12 s (eight times the idle time)
            // or until the server is gone. Counted from when it serves: at 80 % of the two cores
            // (make suite-speed) its start alone took most of the 6 s counted from before it.
            let gone = await offPool { () -> Bool in
                while Date().timeIntervalSince(up) < 12 {
                    guard (try? RawHTTP.send(port: port, "GET", "/")) != nil else { return true }
                    usleep(300_000)
                }
                return false
            }
            // `gone` is the proof: the page ended while refused requests still came. Its task ends after that.
            #expect(gone, "refused requests kept the page alive (\(Date().timeIntervalSince(up)) s after it served)")
            try await place.task?.value
            #expect(Date().timeIntervalSince(up) < 15)
        }
    }
}
