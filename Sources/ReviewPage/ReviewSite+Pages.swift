import Foundation
import GuardianAPI
import Hummingbird
import QuarantineBackend
import QuarantineCore
import SensitivityAnalysis

/// The pages: each asks the backend, then renders (``ReviewPages``).
extension ReviewSite {
    func html(_ body: String, status: Int = 200) -> Response { Self.response(status, type: "text/html; charset=utf-8", body: body) }

    func takeFlash() -> String? { server.flash.withLock { flash in defer { flash = nil }; return flash } }

    func isGuardian() async -> Bool { await !Self.blocking { server.options.guardedAccounts() }.isEmpty }

    func navigation(_ call: Call, child: Bool, current: String) async -> ReviewPages.Navigation {
        .init(childWording: child && call.user == nil, guardian: await isGuardian(), user: call.user, current: current)
    }

    /// `/`: the grid of blurred previews (adult mode, and a guardian's view of an account), or
    /// the child's list in plain words.
    func home(_ call: Call) async throws -> Response {
        let reply = try await send(call, GuardianWire.List())
        let child = reply.childWording && call.user == nil
        let items = reply.answer.items
        let main: String
        if child {
            let cards = items.map { ReviewPages.childCard($0, requestedAt: reply.answer.requests[$0.id]) }.joined()
            main = "<h1>Pictures we put away for you</h1>"
                + (items.isEmpty ? "<p>There is nothing here. Nothing was put away.</p>"
                   : "<p>These were put away because they might show private parts of the body. They are blurred. You don't have to look at them.</p><div class=\"grid\">\(cards)</div>")
        } else {
            // Asked back first (a guardian's attention), then newest first as listed.
            let sorted = items.filter { reply.answer.requests[$0.id] != nil } + items.filter { reply.answer.requests[$0.id] == nil }
            let cards = sorted.map { item in
                ReviewPages.card(item, requestedAt: reply.answer.requests[item.id], shown: server.shown.open(ShownItems.key(user: call.user, id: item.id)).map { close($0.1); return $0.0 },
                                 csrf: call.gate.csrf, user: call.user, back: nil)
            }.joined()
            let whose = call.user.map { "Hidden in \(HTML.escape($0))'s account" } ?? "Hidden items"
            main = "<h1>\(whose)</h1><p class=\"lead\">Newest first. Pictures are blurred until you choose Show.</p>"
                + (items.isEmpty ? "<p>The vault is empty.</p>" : "<div class=\"grid\">\(cards)</div>")
        }
        return html(ReviewPages.layout(title: child ? "Put-away pictures" : "Hidden items", navigation: await navigation(call, child: child, current: "home"),
                                       flash: takeFlash(), main: main, bodyClass: child ? "child" : ""))
    }

    /// `/item/ID`: in child mode the full-page view, pane 1 (what this is, Not now, I'm sure)
    /// or pane 2 (Message a grown-up, Get help, the guardian's PIN); otherwise the grid at it.
    func itemPage(_ call: Call, _ id: Int64) async throws -> Response {
        let reply = try await send(call, GuardianWire.Show(id: id, limit: 1))
        if let fd = reply.preview { close(fd) }
        guard reply.childWording, call.user == nil else { return Self.redirect("/" + userQuery(call) + "#item-\(id)") }
        let item = reply.answer.item
        let picture = ReviewPages.kind(of: item.originalPath) == .video ? "video" : "photo"
        let main: String
        if call.fields["pane"] != "2" {
            main = """
            <section class="pane" aria-labelledby="pane-title"><p class="step">Step 1 of 2</p>
            <h1 id="pane-title">This might be a private \(picture)</h1>
            <p>We put away a \(picture) that might show private parts of the body. It is kept safe and blurred.</p>
            <p>You don't have to look at it. You did nothing wrong.</p>
            <p>If you are not sure, choose Not now. You can always talk to a grown-up you trust.</p>
            <div class="choices"><a class="button primary" href="/">Not now</a> <a class="button" href="/item/\(id)?pane=2">I'm sure</a></div></section>
            """
        } else {
            let key = ShownItems.key(user: nil, id: id)
            let shown = server.shown.open(key).map { close($0.1); return $0.0 }
            let asked = reply.answer.requestedAt.map { "<p class=\"asked\">You asked a grown-up on \(ReviewPages.date($0)).</p>" } ?? ""
            let media: String
            if let shown {
                media = shown.contentType == nil ? "<p class=\"cannot\">A browser cannot show this kind of file.</p>"
                    : shown.isVideo ? "<video controls src=\"/original/\(id)\" aria-label=\"The \(picture), shown\"></video>"
                    : "<img class=\"original\" src=\"/original/\(id)\" alt=\"The \(picture), shown\">"
            } else {
                media = ""
            }
            main = """
            <section class="pane" aria-labelledby="pane-title"><p class="step">Step 2 of 2</p>
            <h1 id="pane-title">Talk to a grown-up first</h1>
            <p>A grown-up you trust can look at it with you. They can give it back if it is OK.</p>\(asked)
            <div class="choices">\(ReviewPages.button("/ask/\(id)", "Message a grown-up", csrf: call.gate.csrf, user: nil, className: "primary"))
            <a class="button" href="/help">Get help</a> <a class="button" href="/">Not now</a></div>
            <section class="guardian-only" aria-labelledby="pin-title"><h2 id="pin-title">For the grown-up</h2>
            <p>Type the guardian PIN to show it here.</p>
            \(ReviewPages.button("/show/\(id)", "Show", csrf: call.gate.csrf, user: nil, back: "item", pinField: true, id: "show"))</section>
            \(media.isEmpty ? "" : "<div class=\"media shown\">\(media)</div>" + ReviewPages.button("/hide/\(id)", "Hide again", csrf: call.gate.csrf, user: nil, back: "item"))
            </section>
            """
        }
        return html(ReviewPages.layout(title: "A put-away \(picture)", navigation: nil, flash: takeFlash(), main: main, bodyClass: "child full"))
    }

    /// `/guardian`: each protected account, its requests first, with release, block and mode
    /// through its guardian service (no PIN: the service knows the guardian by their account).
    func guardianPage(_ call: Call) async throws -> Response {
        let accounts = await Self.blocking { server.options.guardedAccounts() }
        guard !accounts.isEmpty else { return Self.refusal(403, "this page is for a guardian (root or a member of quarantine-guardians) of a protected account") }
        var sections: [String] = []
        for account in accounts {
            let accountCall = Call(gate: call.gate, method: call.method, path: call.path, fields: call.fields, user: account,
                                   backend: try await Self.blocking { try server.options.guardedBackend(account) }, range: nil)
            let list: BackendReply<GuardianWire.List.Answer>
            do { list = try await send(accountCall, GuardianWire.List()) } catch {
                sections.append("<section class=\"account\"><h2>\(HTML.escape(account))</h2><p class=\"error\">\(HTML.escape("\(error)"))</p></section>")
                continue
            }
            let requests = list.answer.requests
            let items = list.answer.items.filter { requests[$0.id] != nil } + list.answer.items.filter { requests[$0.id] == nil }
            let cards = items.map { item in
                ReviewPages.card(item, requestedAt: requests[item.id], shown: server.shown.open(ShownItems.key(user: account, id: item.id)).map { close($0.1); return $0.0 },
                                 csrf: call.gate.csrf, user: account, back: "guardian")
            }.joined()
            let other: AnalysisMode = list.mode == .child ? .adult : .child
            let modeForm = "<form method=\"post\" action=\"/mode\">\(ReviewPages.hidden("csrf", call.gate.csrf))\(ReviewPages.hidden("user", account))\(ReviewPages.hidden("back", "guardian"))"
                + "\(ReviewPages.hidden("mode", other.rawValue))<button type=\"submit\">Switch \(HTML.escape(account)) to \(other.rawValue) mode</button></form>"
            let asked = requests.count
            sections.append("""
            <section class="account" aria-labelledby="account-\(HTML.escape(account))"><h2 id="account-\(HTML.escape(account))">\(HTML.escape(account))</h2>
            <p>Mode: <strong>\(list.mode.rawValue)</strong>. \(items.count) hidden, \(asked) asked back.
            <a href="/history?user=\(FormFields.encode(account))">History</a> · <a href="/settings?user=\(FormFields.encode(account))">Settings</a></p>
            \(modeForm)
            \(items.isEmpty ? "<p>Nothing is hidden.</p>" : "<div class=\"grid\">\(cards)</div>")</section>
            """)
        }
        return html(ReviewPages.layout(title: "Protected accounts", navigation: await navigation(call, child: false, current: "guardian"), flash: takeFlash(),
                                       main: "<h1>Protected accounts</h1><p class=\"lead\">Requests first. What you do here needs no PIN: the guardian service knows you.</p>" + sections.joined()))
    }

    /// `/history`: the audit log, newest first.
    func historyPage(_ call: Call) async throws -> Response {
        let reply = try await send(call, GuardianWire.History())
        let rows = reply.answer.events.prefix(500).map { event in
            "<tr><td>\(ReviewPages.date(event.at))</td><td>\(HTML.escape(event.kind.replacingOccurrences(of: "_", with: " ")))</td><td>\(event.itemId.map(String.init) ?? "")</td>"
                + "<td>\(HTML.escape(event.path.map { ($0 as NSString).lastPathComponent } ?? ""))</td><td>\(HTML.escape(event.actor))</td><td>\(HTML.escape(event.detail ?? ""))</td></tr>"
        }.joined()
        let main = "<h1>History</h1>" + (rows.isEmpty ? "<p>Nothing has happened yet.</p>"
            : "<table><caption>What happened, newest first</caption><thead><tr><th scope=\"col\">When</th><th scope=\"col\">What</th><th scope=\"col\">Item</th><th scope=\"col\">File</th><th scope=\"col\">By</th><th scope=\"col\">Detail</th></tr></thead><tbody>\(rows)</tbody></table>")
        return html(ReviewPages.layout(title: "History", navigation: await navigation(call, child: reply.childWording, current: "history"), flash: takeFlash(), main: main))
    }

    /// `/settings`: the folders watched and the mode, changed by the CLI's rules (the core's
    /// approval says where the guardian PIN is needed).
    func settingsPage(_ call: Call) async throws -> Response {
        let reply = try await send(call, GuardianWire.WatchList())
        let csrf = call.gate.csrf
        let removeNeedsPIN = reply.approval(for: .removeWatchedFolder).needsPIN
        let rows = reply.answer.folders.map { folder in
            "<tr><td>\(HTML.escape(folder.path))</td><td>\(folder.direction)</td><td>\(folder.active ? "yes" : "no")\(folder.exists ? "" : " (missing)")</td><td>"
                + (folder.isDefault ? "default" : ReviewPages.unwatch(folder.path, csrf: csrf, user: call.user, pin: removeNeedsPIN)) + "</td></tr>"
        }.joined()
        let other: AnalysisMode = reply.mode == .child ? .adult : .child
        let modeAction: ProtectedAction = other == .child ? .enterChildMode : .leaveChildMode
        let approval = reply.approval(for: modeAction)
        var modeForm = "<form method=\"post\" action=\"/mode\">\(ReviewPages.hidden("csrf", csrf))\(ReviewPages.hidden("user", call.user))\(ReviewPages.hidden("mode", other.rawValue))"
        if approval.needsPIN { modeForm += ReviewPages.pinInput(id: "mode-pin") + " " }
        if case .refused(let why) = approval { modeForm += "<p class=\"note\">\(HTML.escape(why))</p>" }
        modeForm += "<button type=\"submit\">Switch to \(other.rawValue) mode</button></form>"
        let main = """
        <h1>Settings\(call.user.map { " for " + HTML.escape($0) } ?? "")</h1>
        <section aria-labelledby="mode-title"><h2 id="mode-title">Mode</h2><p>Now: <strong>\(reply.mode.rawValue)</strong>.</p>\(modeForm)</section>
        <section aria-labelledby="folders-title"><h2 id="folders-title">Watched folders</h2>
        <table><caption>Folders whose new files are checked</caption><thead><tr><th scope="col">Folder</th><th scope="col">Direction</th><th scope="col">Watched now</th><th scope="col">Change</th></tr></thead><tbody>\(rows)</tbody></table>
        <form method="post" action="/watch">\(ReviewPages.hidden("csrf", csrf))\(ReviewPages.hidden("user", call.user))
        <label for="folder">Folder to watch</label> <input type="text" id="folder" name="folder" required>
        <input type="checkbox" id="outgoing" name="outgoing"> <label for="outgoing">Outgoing (files being sent)</label>
        <button type="submit">Watch</button></form></section>
        """
        return html(ReviewPages.layout(title: "Settings", navigation: await navigation(call, child: reply.childWording, current: "settings"), flash: takeFlash(), main: main))
    }
}

extension Approval {
    /// Whether the guardian PIN is asked for.
    var needsPIN: Bool { if case .guardianPIN = self { return true } else { return false } }
}

extension ReviewPages {
    /// The form that stops watching `path`.
    static func unwatch(_ path: String, csrf: String, user: String?, pin: Bool) -> String {
        let id = "pin-unwatch-\(abs(path.hashValue))"
        return "<form method=\"post\" action=\"/unwatch\">\(hidden("csrf", csrf))\(hidden("user", user))\(hidden("folder", path))"
            + (pin ? pinInput(id: id) + " " : "") + "<button type=\"submit\">Stop watching<span class=\"hidden-label\"> \(HTML.escape(path))</span></button></form>"
    }
}
