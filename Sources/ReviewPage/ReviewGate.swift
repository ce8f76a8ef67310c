import Foundation

/// The checks every request to the review page passes before any page is made or any action
/// runs: the Host it was sent to, the secret of this start (in the first URL, then a cookie),
/// the Origin of anything that is not a GET, and the CSRF token of every form.
///
/// A browser cannot be made to send a foreign page's request with this server's Host (DNS
/// rebinding), with the cookie (SameSite=Strict, HttpOnly) from another site's page, or with
/// this origin; and no other local account or page can guess the 256-bit secret.
public struct ReviewGate: Sendable {
    /// The secret of this start: in the URL that is opened once, then in the cookie.
    public let secret: String
    /// The token every form carries (per start), checked on every POST.
    public let csrf: String
    /// The port the server is bound to on 127.0.0.1.
    public let port: Int

    public init(secret: String = ReviewGate.randomToken(), csrf: String = ReviewGate.randomToken(), port: Int) {
        self.secret = secret
        self.csrf = csrf
        self.port = port
    }

    /// The cookie's name: one per port (cookies are not kept apart by port).
    public var cookieName: String { "quarantine_review_\(port)" }
    /// The Host values this server answers to.
    public var hosts: [String] { ["127.0.0.1:\(port)", "localhost:\(port)"] }
    /// The origins whose forms it accepts.
    public var origins: [String] { hosts.map { "http://" + $0 } }

    /// What to do with a request.
    public enum Verdict: Sendable, Equatable {
        /// Serve it.
        case pass
        /// The first request, with the right secret in its URL: set the cookie and send the
        /// browser to `location`, the same address without the secret.
        case setCookie(location: String)
        /// Refuse it with `status`; `reason` says why (in the page and the tests).
        case refuse(status: Int, reason: String)
    }

    /// Checks a request's method, Host, secret (query `token` or cookie), and for anything but
    /// GET and HEAD its Origin and `Sec-Fetch-Site`. `query` is the query string's fields.
    public func check(method: String, host: String?, origin: String?, fetchSite: String?, cookies: [String], path: String, query: String?) -> Verdict {
        guard ["GET", "HEAD", "POST"].contains(method) else { return .refuse(status: 405, reason: "only GET and POST are served") }
        guard let host, hosts.contains(host.lowercased()) else {
            return .refuse(status: 421, reason: "this page answers only at http://127.0.0.1:\(port)")
        }
        if method == "POST" {
            // The page's Referrer-Policy (no-referrer) makes a browser send `Origin: null` with
            // its own forms; then only the browser's `Sec-Fetch-Site: same-origin` (a header no
            // page can set) vouches for it. A foreign origin, or none, is refused.
            if let fetchSite, fetchSite != "same-origin" { return .refuse(status: 403, reason: "this form was not sent from the review page (Sec-Fetch-Site)") }
            guard let origin, origins.contains(origin.lowercased()) || (origin == "null" && fetchSite == "same-origin") else {
                return .refuse(status: 403, reason: "this form was not sent from the review page (Origin)")
            }
        }
        let fields = FormFields(encoded: Substring(query ?? ""))
        if let token = fields["token"] {
            guard Self.same(token, secret) else { return .refuse(status: 403, reason: "this address is not the one 'quarantine review' opened (wrong secret)") }
            guard method == "GET" else { return .refuse(status: 403, reason: "the secret is only taken from a link") }
            let rest = fields.pairs.filter { $0.0 != "token" }
            return .setCookie(location: path + (rest.isEmpty ? "" : "?" + FormFields.query(rest)))
        }
        guard cookies.contains(where: { Self.same($0, secret) }) else {
            return .refuse(status: 403, reason: "open the address 'quarantine review' printed or opened (no secret)")
        }
        return .pass
    }

    /// The cookie's values named ``cookieName`` in `Cookie` headers.
    public func cookieValues(_ headers: [String]) -> [String] {
        headers.flatMap { $0.split(separator: ";") }.compactMap { pair in
            let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            return parts.count == 2 && parts[0] == cookieName ? String(parts[1]) : nil
        }
    }

    /// The `Set-Cookie` value that carries the secret.
    public var setCookie: String { "\(cookieName)=\(secret); Path=/; HttpOnly; SameSite=Strict" }

    /// Whether a form's `csrf` field is this start's token.
    public func formIsOurs(_ token: String?) -> Bool { token.map { Self.same($0, csrf) } ?? false }

    /// 32 random bytes (the kernel's getrandom) as hex.
    public static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// Compares in time that does not depend on where they differ.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for index in x.indices { difference |= x[index] ^ y[index] }
        return difference == 0
    }
}
