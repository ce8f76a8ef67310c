import Foundation
import GuardianAPI
import MediaDecoding
import QuarantineCore
import SensitivityAnalysis

/// The review page's HTML: server-made, plain forms (no script), every control labelled, the
/// style sheet served by the page itself.
enum ReviewPages {
    /// What the navigation offers.
    struct Navigation: Sendable {
        var childWording: Bool
        var guardian: Bool
        var user: String?
        var current: String
    }

    /// A whole page: `title`, the navigation, the words an action left, `main`.
    static func layout(title: String, navigation: Navigation?, flash: String?, main: String, bodyClass: String = "") -> String {
        var nav = ""
        if let navigation {
            let query = navigation.user.map { "?user=" + FormFields.encode($0) } ?? ""
            var links: [(String, String, String)] = navigation.childWording
                ? [("home", "/", "Put-away pictures"), ("help", "/help", "Get help"), ("settings", "/settings", "For grown-ups")]
                : [("home", "/" + query, "Hidden items"), ("history", "/history" + query, "History"), ("settings", "/settings" + query, "Settings")]
            if navigation.guardian { links.append(("guardian", "/guardian", "Protected accounts")) }
            nav = "<header><nav aria-label=\"Main\"><ul>" + links.map { key, href, label in
                "<li><a href=\"\(HTML.escape(href))\"\(key == navigation.current ? " aria-current=\"page\"" : "")>\(label)</a></li>"
            }.joined() + "</ul></nav></header>"
        }
        let note = flash.map { "<p class=\"flash\" role=\"status\">\(HTML.escape($0))</p>" } ?? ""
        return """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer"><title>\(HTML.escape(title))</title><link rel="stylesheet" href="/style.css"></head>
        <body class="\(bodyClass)"><a class="skip" href="#main">Skip to the content</a>\(nav)<main id="main">\(note)\(main)</main></body></html>
        """
    }

    /// A hidden form field.
    static func hidden(_ name: String, _ value: String?) -> String {
        value.map { "<input type=\"hidden\" name=\"\(name)\" value=\"\(HTML.escape($0))\">" } ?? ""
    }

    /// A one-button form posting to `action` with the CSRF token (and the account, where to return).
    static func button(_ action: String, _ label: String, csrf: String, user: String?, back: String? = nil, pinField: Bool = false, className: String = "", id: String? = nil) -> String {
        let pin = pinField ? pinInput(id: id.map { "pin-\($0)" } ?? "pin-\(action.replacingOccurrences(of: "/", with: "-"))") : ""
        return "<form method=\"post\" action=\"\(HTML.escape(action))\">\(hidden("csrf", csrf))\(hidden("user", user))\(hidden("back", back))\(pin)<button type=\"submit\" class=\"\(className)\">\(HTML.escape(label))</button></form>"
    }

    /// The guardian PIN's field, labelled.
    static func pinInput(id: String, label: String = "Guardian PIN") -> String {
        "<label for=\"\(id)\">\(HTML.escape(label))</label> <input type=\"password\" id=\"\(id)\" name=\"pin\" inputmode=\"numeric\" autocomplete=\"off\" maxlength=\"12\" required>"
    }

    // MARK: - Words

    static let dateFormat: DateFormatter = {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        return formatter
    }()

    static func date(_ date: Date) -> String { dateFormat.string(from: date) }

    /// A photo, a video or another file, by the original's name.
    static func kind(of path: String) -> MediaType.Kind {
        let ext = (path as NSString).pathExtension.lowercased()
        if ["mp4", "m4v", "mov", "webm", "mkv", "avi", "ogv", "3gp", "wmv", "flv", "mpg", "mpeg", "ts"].contains(ext) { return .video }
        if ["zip", "tar", "gz", "tgz", "bz2", "xz", "7z", "rar", "pdf", "docx", "odt", "epub", "cbz"].contains(ext) { return .container }
        return .image
    }

    /// Why it was hidden, in the notification's words (``Notice``).
    static func why(_ item: GuardianWire.Item, child: Bool) -> String {
        let kind = kind(of: item.originalPath)
        let mode: AnalysisMode = child ? .child : .adult
        let reason = item.reasons.first ?? ""
        if reason.hasPrefix("unverified") { return Notice.held(id: item.id, kind: kind, mode: mode).summary }
        if reason.hasPrefix("blocked") {
            return Notice.hidden(id: item.id, kind: kind, mode: mode, because: reason.contains("site") ? .blockedSite : .blockedBytes).summary
        }
        return Notice.hidden(id: item.id, kind: kind, mode: mode).summary
    }

    /// The site a download came from, when known.
    static func site(_ item: GuardianWire.Item) -> String? {
        (item.originURL ?? item.referrerURL).flatMap { URL(string: $0)?.host }
    }

    static func name(_ item: GuardianWire.Item) -> String { (item.originalPath as NSString).lastPathComponent }

    // MARK: - Cards

    /// One item in the adult grid (and a guardian's): the blurred preview (or the original once
    /// shown), when, where from, why, Show, and the options menu.
    static func card(_ item: GuardianWire.Item, requestedAt: Date?, shown: ShownItems.Original?, csrf: String, user: String?, back: String?) -> String {
        let query = user.map { "?user=" + FormFields.encode($0) } ?? ""
        let name = HTML.escape(name(item))
        let media: String
        if let shown {
            if shown.contentType == nil {
                media = "<p class=\"cannot\">A browser cannot show this kind of file. Put it back to open it.</p>"
            } else if shown.isVideo {
                media = "<video controls preload=\"metadata\" src=\"/original/\(item.id)\(query)\" aria-label=\"\(name), shown\"></video>"
            } else {
                media = "<img class=\"original\" src=\"/original/\(item.id)\(query)\" alt=\"\(name), shown as it is\">"
            }
        } else if item.hasPreview {
            media = "<img class=\"preview\" src=\"/preview/\(item.id)\(query)\" alt=\"Blurred preview of \(name)\">"
        } else {
            media = "<p class=\"cannot\">No preview</p>"
        }
        let showOrHide = shown == nil
            ? button("/show/\(item.id)", "Show", csrf: csrf, user: user, back: back, className: "primary")
            : button("/hide/\(item.id)", "Hide again", csrf: csrf, user: user, back: back)
        let asked = requestedAt.map { "<p class=\"asked\">Asked back on \(date($0))</p>" } ?? ""
        let site = site(item)
        let options = [
            button("/release/\(item.id)", "Put back", csrf: csrf, user: user, back: back),
            button("/delete/\(item.id)", "Delete", csrf: csrf, user: user, back: back, className: "danger"),
            site == nil ? "" : button("/block-site/\(item.id)", "Block this site", csrf: csrf, user: user, back: back, className: "danger"),
            "<a href=\"/help\">Get help</a>",
        ].filter { !$0.isEmpty }.map { "<li>\($0)</li>" }.joined()
        return """
        <article class="item" id="item-\(item.id)" aria-labelledby="title-\(item.id)">
        <div class="media">\(media)</div>
        <h2 id="title-\(item.id)">\(name)</h2>
        <p class="why">\(HTML.escape(why(item, child: false)))</p>\(asked)
        <dl><dt>When</dt><dd>\(date(item.createdAt))</dd><dt>Where from</dt><dd>\(HTML.escape(site ?? "not known"))</dd>
        <dt>Was in</dt><dd>\(HTML.escape((item.originalPath as NSString).deletingLastPathComponent))</dd>
        <dt>Found</dt><dd>\(HTML.escape(item.reasons.joined(separator: "; ")))</dd></dl>
        <div class="actions">\(showOrHide)
        <details><summary>Options<span class="hidden-label"> for \(name)</span></summary><ul class="options">\(options)</ul></details></div>
        </article>
        """
    }

    /// One item in a child's list: the blurred preview, plain words, and the way to the full-page view.
    static func childCard(_ item: GuardianWire.Item, requestedAt: Date?) -> String {
        let picture = kind(of: item.originalPath) == .video ? "video" : "picture"
        let asked = requestedAt == nil ? "" : "<p class=\"asked\">You asked a grown-up for it back.</p>"
        return """
        <article class="item" id="item-\(item.id)" aria-labelledby="title-\(item.id)">
        <div class="media">\(item.hasPreview ? "<img class=\"preview\" src=\"/preview/\(item.id)\" alt=\"A blurred \(picture), number \(item.id)\">" : "")</div>
        <h2 id="title-\(item.id)">Number \(item.id), from \(date(item.createdAt))</h2>
        <p class="why">\(HTML.escape(why(item, child: true)))</p>\(asked)
        <p><a class="button" href="/item/\(item.id)">What is this?</a></p>
        </article>
        """
    }

    // MARK: - Plain pages

    static func refusal(status: Int, reason: String) -> String {
        layout(title: "Refused", navigation: nil, flash: nil, main: "<h1>Not served (\(status))</h1><p class=\"error\">\(HTML.escape(reason))</p>")
    }

    static func failure(_ words: String, back: String) -> String {
        layout(title: "Not done", navigation: nil, flash: nil, main: "<h1>Not done</h1><p class=\"error\" role=\"alert\">\(HTML.escape(words))</p><p><a class=\"button\" href=\"\(HTML.escape(back))\">Go back</a></p>")
    }

    /// The help page of the notifications' Get help, in this page's style.
    static func help() -> String {
        let page = HelpPage.html
        let start = page.range(of: "<body>")?.upperBound ?? page.startIndex
        let end = page.range(of: "</body>")?.lowerBound ?? page.endIndex
        return layout(title: "You can get help", navigation: nil, flash: nil,
                      main: String(page[start..<end]) + "<p><a class=\"button\" href=\"/\">Back</a></p>", bodyClass: "child")
    }
}
