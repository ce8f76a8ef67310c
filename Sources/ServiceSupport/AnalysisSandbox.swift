#if canImport(Glibc)
import Glibc
#endif
import CSystemShims

/// The analysis worker's confinement: what the process that runs the image and video decoders
/// and the ONNX models on untrusted files gives up, for good, before it reads its first request.
///
/// In order, in the worker:
/// 1. ``becomeWorker(_:)`` (the guardian service's workers): a user and group of its own, no
///    supplementary groups, so no account's database, PIN hash or vault is readable to it.
/// 2. ``enter(keepingDescriptorsThrough:)``: dies when the service that started it dies
///    (`PR_SET_PDEATHSIG`); holds only descriptors 0 to 3 (its socket to the service), or 4 too
///    (its runtime folder) until the models are loaded; no capabilities (effective, permitted,
///    inheritable, ambient and, where it could drop it, bounding set all empty), cannot gain any
///    through `execve` (`no_new_privs`), writes no core files; and runs, in every thread, under a
///    seccomp filter that refuses with `EPERM` any change to the file system, new sockets,
///    `execve`, `fork`, tracing or reading other processes, signals, scheduling, priorities and
///    resource limits aimed at any process but itself (`prlimit64` may only read), file locks,
///    changing its user or groups, namespaces, keyrings, bpf, io_uring and kernel modules; and
///    allows, of everything else, only an allow-list of the calls decoding and inference make.
/// 3. ``sealFileSystem(readable:)``, once the models and every decoder's lazily loaded part are
///    loaded: Landlock with every file-system right of the kernel's ABI handled and none allowed
///    (but reading the system's fonts, ``fontFolders``), in every thread: no other path can be
///    opened, listed, executed, created or changed any more. Only the descriptors the service
///    passes (one per file) are read from then on.
///
/// `Sources/CSystemShims/qsys_sandbox.c` has the full list and the reasons.
public enum AnalysisSandbox {
    /// A user and group for the worker, and the user it keeps as its saved user id (the
    /// service's, so the service may still stop it).
    public struct Identity: Sendable, Equatable, CustomStringConvertible {
        public var uid: UInt32
        public var gid: UInt32
        public init(uid: UInt32, gid: UInt32) {
            self.uid = uid
            self.gid = gid
        }
        /// `uid:gid`, as passed to the worker in its environment.
        public var description: String { "\(uid):\(gid)" }
        /// Reads `uid:gid`.
        public init?(_ text: String) {
            let parts = text.split(separator: ":")
            guard parts.count == 2, let uid = UInt32(parts[0]), let gid = UInt32(parts[1]) else { return nil }
            self.init(uid: uid, gid: gid)
        }
    }

    /// What Landlock does in this process after ``sealFileSystem(readable:)``.
    public enum FileSystemSeal: Sendable, Equatable, CustomStringConvertible {
        /// In force with this ABI of the kernel; only the files beneath `readable` may be read.
        case sealed(abi: Int, readable: [String])
        /// The kernel has no Landlock (or it is off): why.
        case unavailable(String)

        public var description: String {
            switch self {
            case .sealed(let abi, let readable) where readable.isEmpty: return "Landlock ABI \(abi): no file-system access"
            case .sealed(let abi, let readable): return "Landlock ABI \(abi): no file-system access but reading \(readable.joined(separator: ", "))"
            case .unavailable(let why): return "no Landlock (\(why)): file-system access is not sealed"
            }
        }
    }

    /// The folders the analysis worker may still read after the seal: the system's fonts.
    /// FreeType opens a font file each time librsvg draws an SVG's text (and closes it after),
    /// so fonts cannot be loaded once beforehand; without them an SVG's text is not drawn at
    /// all. They are public files of the system; a folder that does not exist is left out.
    public static let fontFolders = ["/usr/share/fonts", "/usr/local/share/fonts"]

    /// Takes the worker's own user and group (needs CAP_SETUID and CAP_SETGID). The saved user id
    /// stays this process's current user (the service's): the seccomp filter of ``enter(keepingDescriptorsThrough:)``
    /// then refuses every set*uid call, so it can never be taken back.
    public static func becomeWorker(_ identity: Identity) throws(ServiceError) {
        let saved = getuid()
        try call("take the analysis worker's own user", "the analysis worker could not take its own user \(identity) and must not analyse anything") {
            qsys_become_worker_identity(identity.uid, identity.gid, saved, $0, $1)
        }
    }

    /// Enters the sandbox. Call it once, first thing in the worker, before any thread is
    /// started and before any request is read. Throws a ``ServiceError`` saying which step
    /// failed; the process may then be partly confined and must exit instead of serving requests.
    public static func enter(keepingDescriptorsThrough highest: Int32 = 3) throws(ServiceError) {
        try call("enter the analysis sandbox", "the analysis worker could not confine itself and must not analyse anything") {
            qsys_enter_analysis_sandbox_keeping(highest, $0, $1)
        }
    }

    /// The kernel's Landlock ABI, or nil when it has none (or it is disabled).
    public static var landlockABI: Int? {
        let abi = qsys_landlock_abi()
        return abi > 0 ? Int(abi) : nil
    }

    /// Takes away all file-system access from every thread, for good (Landlock), but reading
    /// beneath the folders of `readable` that exist. Returns
    /// whether it is in force; throws when Landlock exists but could not be applied to every
    /// thread (the process must then not analyse anything).
    public static func sealFileSystem(readable: [String] = []) throws(ServiceError) -> FileSystemSeal {
        let present = readable.filter { access($0, F_OK) == 0 }
        var reason = [CChar](repeating: 0, count: 256)
        let paths = present.map { strdup($0) } + [nil]
        defer { paths.forEach { free($0) } }
        let result = paths.map { UnsafePointer($0) }.withUnsafeBufferPointer { list in
            reason.withUnsafeMutableBufferPointer { qsys_landlock_seal_reading(0, list.baseAddress, $0.baseAddress, $0.count) }
        }
        let cause = text(reason)
        if result > 0 { return .sealed(abi: Int(result), readable: present) }
        if result == 0 { return .unavailable(cause) }
        throw ServiceError(code: .processLaunchFailed, operation: "seal the analysis worker's file-system access",
                           message: "Landlock could not be applied to every thread of the analysis worker, which must not analyse anything", cause: cause)
    }

    static func call(_ operation: String, _ message: String, _ body: (UnsafeMutablePointer<CChar>?, Int) -> Int32) throws(ServiceError) {
        var reason = [CChar](repeating: 0, count: 256)
        let result = reason.withUnsafeMutableBufferPointer { body($0.baseAddress, $0.count) }
        guard result == 0 else {
            throw ServiceError(code: .processLaunchFailed, operation: operation, message: message, cause: text(reason))
        }
    }

    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
