import Foundation

/// One SOCK_SEQPACKET message of the worker's and the launcher's protocols: a type byte, then
/// JSON (``WorkerMessage``, ``LauncherMessage``).
enum TypedPacket {
    static func encode<T: Encodable>(_ kind: UInt8, _ value: T) -> [UInt8] {
        [kind] + ((try? JSONEncoder().encode(value)).map { [UInt8]($0) } ?? [])
    }

    /// The JSON body of `bytes` as `type`; nil when there is none or it is not one.
    static func body<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) -> T? {
        guard bytes.count > 1 else { return nil }
        return try? JSONDecoder().decode(type, from: Data(bytes[1...]))
    }
}
