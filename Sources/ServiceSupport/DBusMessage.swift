import CDBus

/// A D-Bus value to append to a message: the notification protocol's types, and what the
/// analysis service on the session bus answers with (structs, arrays of them, variants).
public indirect enum DBusValue: Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case stringArray([String])
    /// `a{sv}`: each value wrapped in a variant.
    case variantDictionary([(String, DBusValue)])
    /// An array whose elements have `elementSignature` (given, since the array may be empty).
    case array(elementSignature: String, [DBusValue])
    case structure([DBusValue])
    case variant(DBusValue)

    /// The value's D-Bus type signature, e.g. `"a(dd)"`.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .stringArray: "as"
        case .variantDictionary: "a{sv}"
        case .array(let element, _): "a" + element
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }
}

/// Appends values to a message with the iterator API (the variadic
/// `dbus_message_append_args` cannot be called from Swift).
public enum DBusMessageWriter {
    /// Appends `values` as the message's arguments; false when libdbus is out of memory.
    public static func append(_ values: [DBusValue], to message: OpaquePointer) -> Bool {
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
        case .boolean(let flag):
            var v: dbus_bool_t = flag ? 1 : 0
            return dbus_message_iter_append_basic(iter, qdbus_type_boolean(), &v) != 0
        case .int64(var v):
            return dbus_message_iter_append_basic(iter, qdbus_type_int64(), &v) != 0
        case .uint64(var v):
            return dbus_message_iter_append_basic(iter, qdbus_type_uint64(), &v) != 0
        case .double(var v):
            return dbus_message_iter_append_basic(iter, qdbus_type_double(), &v) != 0
        case .objectPath(let path):
            return path.withCString { cString in
                var pointer: UnsafePointer<CChar>? = cString
                return dbus_message_iter_append_basic(iter, qdbus_type_object_path(), &pointer) != 0
            }
        case .array(let element, let values):
            return container(qdbus_type_array(), signature: element, in: iter) { sub in
                values.allSatisfy { $0.signature == element && append($0, to: sub) }
            }
        case .structure(let fields):
            return container(qdbus_type_struct(), signature: nil, in: iter) { sub in
                fields.allSatisfy { append($0, to: sub) }
            }
        case .variant(let inner):
            return container(qdbus_type_variant(), signature: inner.signature, in: iter) { sub in
                append(inner, to: sub)
            }
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
                    container(qdbus_type_dict_entry(), signature: nil, in: array) { entry in
                        appendString(key, to: entry)
                            && container(qdbus_type_variant(), signature: inner.signature, in: entry) { variant in
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
public struct DBusMessageReader: ~Copyable {
    private let iter: UnsafeMutablePointer<DBusMessageIter>
    private var atEnd: Bool

    public init(_ message: OpaquePointer) {
        iter = .allocate(capacity: 1)
        atEnd = dbus_message_iter_init(message, iter) == 0
    }

    deinit { iter.deallocate() }

    private mutating func advance() {
        atEnd = dbus_message_iter_next(iter) == 0
    }

    private var type: Int32 { atEnd ? qdbus_type_invalid() : dbus_message_iter_get_arg_type(iter) }

    /// Whether every argument was read.
    public var isAtEnd: Bool { atEnd }

    public mutating func string() -> String? {
        guard type == qdbus_type_string() else { return nil }
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(iter, &pointer)
        advance()
        return pointer.map { String(cString: $0) }
    }

    /// A descriptor (`h`): a close-on-exec duplicate the caller owns and must close.
    public mutating func unixFD() -> Int32? {
        guard type == qdbus_type_unix_fd() else { return nil }
        var fd: Int32 = -1
        dbus_message_iter_get_basic(iter, &fd)
        advance()
        return fd >= 0 ? fd : nil
    }

    public mutating func uint32() -> UInt32? {
        guard type == qdbus_type_uint32() else { return nil }
        var value: UInt32 = 0
        dbus_message_iter_get_basic(iter, &value)
        advance()
        return value
    }

    public mutating func stringArray() -> [String]? {
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
