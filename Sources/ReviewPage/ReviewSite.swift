import Foundation
import GuardianAPI
import HTTPTypes
import Hummingbird
import QuarantineBackend
import QuarantineStore
import SensitivityAnalysis

/// The review page's requests: every one passes ``ReviewGate`` first (and a POST its CSRF
/// token), then one handler, which reaches the core only through a ``QuarantineBackend``:
/// the page adds no rule of its own (consent, the PIN and its rate limit are the core's).
struct ReviewSite: Sendable {
    let server: ReviewServer

    /// A form body is small: a PIN, a folder, the token.
    static let maxForm = 16 * 1024

    /// What one request is about: the gate of this start, the form or query, whose vault.
    struct Call: Sendable {
        let gate: ReviewGate
        let method: String
        let path: [Substring]
        let fields: FormFields
        /// A guarded account (a guardian's page), or nil for the person's own.
        let user: String?
        let backend: any QuarantineBackend
        /// The `Range` header (a video's player asks for parts).
        let range: String?
    }

    func respond(to request: Request) async -> Response {
        guard let gate = server.gate.withLock({ $0 }) else { return Self.refusal(503, "the page is starting") }
        let target = request.head.path ?? "/"
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0])
        let query = parts.count > 1 ? String(parts[1]) : nil
        switch gate.check(method: request.method.rawValue, host: request.head.authority, origin: request.headers[.origin],
                          fetchSite: request.headers[HTTPField.Name("Sec-Fetch-Site")!], cookies: gate.cookieValues(request.headers[values: .cookie]),
                          path: path, query: query) {
        case .refuse(let status, let reason): return Self.refusal(status, reason)
        case .setCookie(let location):
            server.lastRequest.withLock { $0 = Date() }
            return Self.entrance(location, cookie: gate.setCookie)
        case .pass: break
        }
        // Only the person's requests keep the page alive (refused ones, from anyone, do not).
        server.lastRequest.withLock { $0 = Date() }
        var fields = FormFields(encoded: Substring(query ?? ""))
        if request.method == .post {
            guard let body = try? await request.body.collect(upTo: Self.maxForm) else { return Self.refusal(413, "the form is too long") }
            fields = FormFields(encoded: Substring(String(buffer: body)))
            guard gate.formIsOurs(fields["csrf"]) else { return Self.refusal(403, "this form has no valid CSRF token: reload the page and try again") }
        }
        let user = fields["user"].flatMap { $0.isEmpty ? nil : $0 }
        let backend: any QuarantineBackend
        if let user {
            let accounts = await Self.blocking { server.options.guardedAccounts() }
            guard accounts.contains(user) else { return Self.refusal(403, "\(user) is not an account you look after here") }
            do { backend = try await Self.blocking { try server.options.guardedBackend(user) } } catch {
                return Self.refusal(502, "\(error)")
            }
        } else {
            backend = server.options.own
        }
        let call = Call(gate: gate, method: request.method.rawValue, path: path.split(separator: "/"), fields: fields, user: user, backend: backend,
                        range: request.headers[.range])
        do {
            return try await route(call)
        } catch let error as BackendError {
            return await failurePage(call, error)
        } catch {
            return Self.refusal(500, "\(error)")
        }
    }

    /// One handler per method and path.
    func route(_ call: Call) async throws -> Response {
        let id = call.path.count == 2 ? Int64(call.path[1]) : nil
        switch (call.method, call.path.first.map(String.init) ?? "", id) {
        case ("GET", "style.css", _), ("HEAD", "style.css", _):
            return Self.response(200, type: "text/css; charset=utf-8", body: ReviewStyle.css)
        case ("GET", "", _), ("HEAD", "", _): return try await home(call)
        case ("GET", "guardian", _): return try await guardianPage(call)
        case ("GET", "item", let id?): return try await itemPage(call, id)
        case ("GET", "preview", let id?): return try await preview(call, id)
        case ("GET", "original", let id?), ("HEAD", "original", let id?): return original(call, id)
        case ("GET", "history", _): return try await historyPage(call)
        case ("GET", "settings", _): return try await settingsPage(call)
        case ("GET", "help", _): return Self.response(200, type: "text/html; charset=utf-8", body: ReviewPages.help())
        case ("POST", "show", let id?): return try await show(call, id)
        case ("POST", "hide", let id?):
            server.shown.forget(ShownItems.key(user: call.user, id: id))
            return Self.redirect(back(call, id))
        case ("POST", "release", let id?):
            let reply = try await send(call, GuardianWire.Release(id: id, pin: pin(call)))
            return done(call, id, "Put back: \(reply.answer.path)" + (reply.answer.renamed ? " (renamed: a file had that name)" : ""))
        case ("POST", "delete", let id?):
            _ = try await send(call, GuardianWire.Block(id: id, pin: pin(call), keep: false, origin: false))
            return done(call, id, "Deleted; the same file will be hidden again if it comes back.")
        case ("POST", "block-site", let id?):
            let reply = try await send(call, GuardianWire.Block(id: id, pin: pin(call), keep: false, origin: true))
            return done(call, id, reply.answer.blockedHost.map { "Deleted, and \($0) is blocked: whatever comes from it is hidden." }
                        ?? "Deleted; its site is not known, so no site was blocked.")
        case ("POST", "ask", let id?):
            _ = try await send(call, GuardianWire.Ask(id: id))
            server.flash.withLock { $0 = "We told a grown-up that you would like it back. They will look at it with you." }
            return Self.redirect("/item/\(id)?pane=2")
        case ("POST", "mode", _):
            guard let mode = call.fields["mode"].flatMap(AnalysisMode.init(rawValue:)) else { return Self.refusal(400, "no mode chosen") }
            let reply = try await send(call, GuardianWire.Mode(mode: mode, pin: pin(call)))
            server.flash.withLock { $0 = reply.answer.changed ? "The mode is now \(mode.rawValue). " + (reply.answer.reloaded ?? "") : "The mode was \(mode.rawValue) already." }
            return Self.redirect(call.fields["back"] == "guardian" ? "/guardian" : "/settings" + userQuery(call))
        case ("POST", "watch", _), ("POST", "unwatch", _):
            guard let folder = call.fields["folder"], !folder.isEmpty else { return Self.refusal(400, "no folder given") }
            let remove = call.path.first == "unwatch"
            let reply = try await send(call, GuardianWire.Watch(folder: folder, outgoing: call.fields["outgoing"] == "on", remove: remove, pin: pin(call)))
            server.flash.withLock {
                $0 = reply.answer.path.map { (remove ? "No longer watching \($0). " : "Watching \($0). ") + (reply.answer.reloaded ?? "") } ?? "Nothing changed."
            }
            return Self.redirect("/settings" + userQuery(call))
        default:
            return Self.refusal(404, "there is no such page")
        }
    }

    // MARK: - Actions

    /// The PIN typed in the form, if any.
    func pin(_ call: Call) -> String? { call.fields["pin"].flatMap { $0.isEmpty ? nil : $0 } }

    /// Sends `request` through the call's backend, off the event loop, one at a time: a guardian
    /// service's connection carries one request and its answer at a time (a browser loads the
    /// previews of a grid at once).
    func send<R: GuardianRequest>(_ call: Call, _ request: R) async throws -> BackendReply<R.Answer> {
        let backend = call.backend
        let turn = server.backendTurn
        return try await Self.blocking {
            turn.lock()
            defer { turn.unlock() }
            return try backend.send(request)
        }
    }

    /// Show: the core's consent for ``ProtectedAction/show`` (through the backend), then the
    /// original kept open for this start; only then is `/original/ID` served.
    func show(_ call: Call, _ id: Int64) async throws -> Response {
        let reply = try await send(call, GuardianWire.Reveal(id: id, pin: pin(call)))
        guard let fd = reply.preview else { throw BackendError.unreachable("no file came with the answer") }
        var head = [UInt8](repeating: 0, count: 32)
        let count = pread(fd, &head, head.count, 0)
        let type = ShownItems.contentType(of: Array(head.prefix(max(count, 0))))
        server.shown.keep(.init(fd: fd, name: reply.answer.name, size: reply.answer.size, contentType: type), for: ShownItems.key(user: call.user, id: id))
        return Self.redirect(back(call, id))
    }

    /// After an action on item `id`: the words, and back to the page it came from.
    func done(_ call: Call, _ id: Int64, _ words: String) -> Response {
        server.shown.forget(ShownItems.key(user: call.user, id: id))
        server.flash.withLock { $0 = words }
        return Self.redirect(call.fields["back"] == "guardian" ? "/guardian" : "/" + userQuery(call))
    }

    /// Where a Show or Hide of item `id` returns to.
    func back(_ call: Call, _ id: Int64) -> String {
        switch call.fields["back"] {
        case "guardian": return "/guardian#item-\(id)"
        case "item": return "/item/\(id)?pane=2" + (call.user.map { "&user=" + FormFields.encode($0) } ?? "")
        default: return "/" + userQuery(call) + "#item-\(id)"
        }
    }

    func userQuery(_ call: Call) -> String { call.user.map { "?user=" + FormFields.encode($0) } ?? "" }

    // MARK: - Media

    /// The blurred preview, as the backend hands it over (never the original).
    func preview(_ call: Call, _ id: Int64) async throws -> Response {
        let reply = try await send(call, GuardianWire.Show(id: id, limit: 1))
        guard let fd = reply.preview else { return Self.refusal(404, "item \(id) has no preview") }
        guard reply.answer.item.id == id else { close(fd); return Self.refusal(502, "the answer was about another item") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count < 32 << 20 {
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        guard let softened = PagePreview.soften(bytes) else { return Self.refusal(415, "the preview of item \(id) cannot be read") }
        return Self.response(200, type: "image/jpeg", bytes: softened)
    }

    /// The original of an item the person chose Show for in this start; refused otherwise.
    func original(_ call: Call, _ id: Int64) -> Response {
        guard let (original, fd) = server.shown.open(ShownItems.key(user: call.user, id: id)) else {
            return Self.refusal(403, "item \(id) is not shown: choose Show first")
        }
        guard let type = original.contentType, call.method == "GET" else {
            close(fd)
            return original.contentType == nil ? Self.refusal(415, "a browser cannot show this kind of file; put it back to open it") : Self.response(200, type: original.contentType!, bytes: [])
        }
        var size = Int64(original.size)
        var info = stat()
        if fstat(fd, &info) == 0 { size = Int64(info.st_size) }
        var headers = Self.securityHeaders()
        headers[.contentType] = type
        headers[.acceptRanges] = "bytes"
        var start: Int64 = 0, end = size - 1, status = 200
        if let header = call.range, let parsed = Self.range(header, size: size) { (start, end, status) = (parsed.0, parsed.1, 206) }
        if status == 206 { headers[.contentRange] = "bytes \(start)-\(end)/\(size)" }
        let length = max(end - start + 1, 0)
        let (first, last) = (start, end)
        return Response(status: .init(code: status), headers: headers, body: ResponseBody(contentLength: Int(length)) { writer in
            defer { close(fd) }
            let end = last
            var offset = first
            var chunk = [UInt8](repeating: 0, count: 256 * 1024)
            while offset <= end {
                let want = Int(min(Int64(chunk.count), end - offset + 1))
                let count = pread(fd, &chunk, want, off_t(offset))
                if count <= 0 { break }
                try await writer.write(ByteBuffer(bytes: chunk[0..<count]))
                offset += Int64(count)
            }
            try await writer.finish(nil)
        })
    }

    /// `bytes=A-B`, `bytes=A-` or `bytes=-N` within `size`.
    static func range(_ header: String, size: Int64) -> (Int64, Int64)? {
        guard header.hasPrefix("bytes="), !header.contains(","), size > 0 else { return nil }
        let spec = header.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        if spec[0].isEmpty, let suffix = Int64(spec[1]), suffix > 0 { return (max(size - suffix, 0), size - 1) }
        guard let start = Int64(spec[0]), start < size else { return nil }
        let end = spec[1].isEmpty ? size - 1 : min(Int64(spec[1]) ?? -1, size - 1)
        return end >= start ? (start, end) : nil
    }

    // MARK: - Responses

    /// The headers every answer carries: nothing loaded from elsewhere, no framing, no sniffing,
    /// no referrer, nothing cached.
    static func securityHeaders() -> HTTPFields {
        var headers = HTTPFields()
        headers[HTTPField.Name("Content-Security-Policy")!] =
            "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'self'; script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        headers[HTTPField.Name("Cross-Origin-Resource-Policy")!] = "same-origin"
        headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] = "same-origin"
        headers[.cacheControl] = "no-store"
        return headers
    }

    static func response(_ status: Int, type: String, body: String) -> Response {
        response(status, type: type, bytes: Array(body.utf8))
    }

    static func response(_ status: Int, type: String, bytes: [UInt8]) -> Response {
        var headers = securityHeaders()
        headers[.contentType] = type
        return Response(status: .init(code: status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The answer to the first request (the secret in its URL): the cookie, and a page of this
    /// server's own that moves on to `location`. Not a redirect: opened from the launcher file
    /// (`file://`) or another program, the navigation is cross-site, and a browser does not send
    /// a SameSite=Strict cookie along its redirects (Chromium answered 403 after the launcher);
    /// the page's own refresh is a same-site navigation, which carries it.
    static func entrance(_ location: String, cookie: String) -> Response {
        let target = HTML.escape(location)
        var response = response(200, type: "text/html; charset=utf-8", body: """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=\(target)">\
            <title>Opening the review page</title></head><body><p><a href="\(target)">Open the review page</a></p></body></html>
            """)
        response.headers[.setCookie] = cookie
        return response
    }

    static func redirect(_ location: String, cookie: String? = nil) -> Response {
        var headers = securityHeaders()
        headers[.location] = location
        if let cookie { headers[.setCookie] = cookie }
        return Response(status: .seeOther, headers: headers)
    }

    /// A refusal: a plain page that says why (no form, no token).
    static func refusal(_ status: Int, _ reason: String) -> Response {
        response(status, type: "text/html; charset=utf-8", body: ReviewPages.refusal(status: status, reason: reason))
    }

    /// What the core or the service said no to, in a page that leads back.
    func failurePage(_ call: Call, _ error: BackendError) async -> Response {
        let status: Int
        let words: String
        switch error {
        case .refusal(.wrongPIN(let wait)):
            status = 403
            words = "That PIN is not right." + (wait > 0 ? " The next try must wait \(GuardianPIN.describe(wait))." : "")
        case .refusal(.waitForPIN(let until)):
            status = 429
            words = "Too many wrong PINs. Try again in \(GuardianPIN.describe(until.timeIntervalSinceNow))."
        case .refusal(.refused(let reason)), .refusal(.failed(let reason)):
            status = 403
            words = reason.prefix(1).uppercased() + reason.dropFirst()
        case .refusal(.invalid(let problem)):
            status = 400
            words = problem.description
        case .unreachable(let reason):
            status = 502
            words = reason
        }
        let back = call.path.count == 2 && call.fields["back"] == "item" ? "/item/\(call.path[1])?pane=2" + userQuery(call).replacingOccurrences(of: "?", with: "&")
            : call.fields["back"] == "guardian" ? "/guardian" : "/" + userQuery(call)
        return Self.response(status, type: "text/html; charset=utf-8", body: ReviewPages.failure(words, back: back))
    }

    /// Runs blocking work (the backend: files, SQLite, a socket) off the cooperative pool.
    static func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { done in
            DispatchQueue.global().async { done.resume(with: Result { try work() }) }
        }
    }

    static func blocking<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { done in
            DispatchQueue.global().async { done.resume(returning: work()) }
        }
    }
}
