import CDBus

/// A D-Bus value to append to a message: only the types the notification
/// protocol uses.
enum DBusValue {
    case byte(UInt8)
    case int32(Int32)
    case uint32(UInt32)
    case string(String)
    case stringArray([String])
    /// `a{sv}` with the variant holding the given value (byte, int32, uint32 or string).
    case variantDictionary([(String, DBusValue)])

    /// The D-Bus signature of a basic value, for a variant.
    var basicSignature: String? {
        switch self {
        case .byte: "y"
        case .int32: "i"
        case .uint32: "u"
        case .string: "s"
        default: nil
        }
    }
}

/// Appends values to a message with the iterator API (the variadic
/// `dbus_message_append_args` cannot be called from Swift).
enum DBusMessageWriter {
    /// Appends `values` as the message's arguments; false when libdbus is out of memory.
    static func append(_ values: [DBusValue], to message: OpaquePointer) -> Bool {
        let iter = UnsafeMutablePointer<DBusMessageIter>.allocate(capacity: 1)
        defer { iter.deallocate() }
        dbus_message_iter_init_append(message, iter)
        for value in values {
            guard append(value, to: iter) else { return false }
        }
        return true
    }

    private static func append(_ value: DBusValue, to iter: UnsafeMutablePointer<DBusMessageIter>) -> Bool {
        switch value {
        case .byte(var v):
            return dbus_message_iter_append_basic(iter, qdbus_type_byte(), &v) != 0
        case .int32(var v):
            return dbus_message_iter_append_basic(iter, qdbus_type_int32(), &v) != 0
        case .uint32(var v):
            return dbus_message_iter_append_basic(iter, qdbus_type_uint32(), &v) != 0
        case .string(let s):
            return appendString(s, to: iter)
        case .stringArray(let strings):
            return container(qdbus_type_array(), signature: "s", in: iter) { sub in
                strings.allSatisfy { appendString($0, to: sub) }
            }
        case .variantDictionary(let entries):
            return container(qdbus_type_array(), signature: "{sv}", in: iter) { array in
                entries.allSatisfy { key, inner in
                    guard let signature = inner.basicSignature else { return false }
                    return container(qdbus_type_dict_entry(), signature: nil, in: array) { entry in
                        appendString(key, to: entry)
                            && container(qdbus_type_variant(), signature: signature, in: entry) { variant in
                                append(inner, to: variant)
                            }
                    }
                }
            }
        }
    }

    /// D-Bus strings are UTF-8 without NUL (libdbus aborts on invalid ones by
    /// default): Swift strings are UTF-8, NULs are dropped here.
    private static func appendString(_ s: String, to iter: UnsafeMutablePointer<DBusMessageIter>) -> Bool {
        let clean = s.contains("\0") ? s.replacingOccurrences(of: "\0", with: "") : s
        return clean.withCString { cString in
            var pointer: UnsafePointer<CChar>? = cString
            return dbus_message_iter_append_basic(iter, qdbus_type_string(), &pointer) != 0
        }
    }

    private static func container(_ type: Int32, signature: String?, in parent: UnsafeMutablePointer<DBusMessageIter>,
                                  _ body: (UnsafeMutablePointer<DBusMessageIter>) -> Bool) -> Bool {
        let sub = UnsafeMutablePointer<DBusMessageIter>.allocate(capacity: 1)
        defer { sub.deallocate() }
        let opened: Bool
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(parent, type, $0, sub) } != 0
        } else {
            opened = dbus_message_iter_open_container(parent, type, nil, sub) != 0
        }
        guard opened else { return false }
        guard body(sub) else {
            dbus_message_iter_abandon_container(parent, sub)
            return false
        }
        return dbus_message_iter_close_container(parent, sub) != 0
    }
}

/// Reads a message's arguments in order, checking each one's type.
struct DBusMessageReader: ~Copyable {
    private let iter: UnsafeMutablePointer<DBusMessageIter>
    private var atEnd: Bool

    init(_ message: OpaquePointer) {
        iter = .allocate(capacity: 1)
        atEnd = dbus_message_iter_init(message, iter) == 0
    }

    deinit { iter.deallocate() }

    private mutating func advance() {
        atEnd = dbus_message_iter_next(iter) == 0
    }

    private var type: Int32 { atEnd ? qdbus_type_invalid() : dbus_message_iter_get_arg_type(iter) }

    mutating func string() -> String? {
        guard type == qdbus_type_string() else { return nil }
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(iter, &pointer)
        advance()
        return pointer.map { String(cString: $0) }
    }

    mutating func uint32() -> UInt32? {
        guard type == qdbus_type_uint32() else { return nil }
        var value: UInt32 = 0
        dbus_message_iter_get_basic(iter, &value)
        advance()
        return value
    }

    mutating func stringArray() -> [String]? {
        guard type == qdbus_type_array(), dbus_message_iter_get_element_type(iter) == qdbus_type_string() else { return nil }
        let sub = UnsafeMutablePointer<DBusMessageIter>.allocate(capacity: 1)
        defer { sub.deallocate() }
        dbus_message_iter_recurse(iter, sub)
        var strings: [String] = []
        while dbus_message_iter_get_arg_type(sub) == qdbus_type_string() {
            var pointer: UnsafePointer<CChar>? = nil
            dbus_message_iter_get_basic(sub, &pointer)
            if let pointer { strings.append(String(cString: pointer)) }
            if dbus_message_iter_next(sub) == 0 { break }
        }
        advance()
        return strings
    }
}
