import Foundation

/// Every `--json` of the CLI: Encodable values, one encoder configuration (keys sorted, slashes
/// as they are, dates in ISO 8601, one line per value: JSON Lines where a verb prints several).
enum JSONOutput {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    /// `value` as one line of JSON.
    static func line<Value: Encodable>(_ value: Value) -> String {
        String(decoding: (try? encoder.encode(value)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// Prints an object that is not (yet) an Encodable value (`config show`; `guardian status`,
    /// whose session filter report is one), with the same options.
    static func printObject(_ object: Any) {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        printOut(String(decoding: data, as: UTF8.self))
    }

    /// Prints `value` as one line of JSON.
    static func print<Value: Encodable>(_ value: Value) {
        printOut(line(value))
    }
}
