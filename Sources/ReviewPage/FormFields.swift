import Foundation

/// The fields of a query string or an `application/x-www-form-urlencoded` body.
struct FormFields: Sendable {
    /// The pairs in their order (a name may repeat: the first counts).
    let pairs: [(String, String)]

    init(pairs: [(String, String)]) { self.pairs = pairs }

    /// Reads `a=1&b=two+words`; a pair that does not decode is dropped.
    init(encoded: Substring) {
        pairs = encoded.split(separator: "&", omittingEmptySubsequences: true).compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]) else { return nil }
            guard let value = parts.count > 1 ? Self.decode(parts[1]) : "" else { return nil }
            return (name, value)
        }
    }

    subscript(_ name: String) -> String? { pairs.first { $0.0 == name }?.1 }

    /// `+` as a space, then percent-decoded.
    static func decode(_ text: Substring) -> String? {
        String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// A value for a query string or a form.
    static func encode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// `pairs` as a query string.
    static func query(_ pairs: [(String, String)]) -> String {
        pairs.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&")
    }
}
