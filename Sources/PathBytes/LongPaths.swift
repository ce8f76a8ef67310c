import Glibc

/// Calls by path that work past PATH_MAX (issue 27/26: a folder deeper than PATH_MAX was never
/// checked): a path of PATH_MAX bytes or more is resolved one component at a time with
/// `openat(O_PATH | O_DIRECTORY | O_NOFOLLOW)` from `/`, never through a symbolic link, and the call
/// is made on the last component from its folder's descriptor. A shorter path goes to the kernel as
/// it is.
public enum LongPaths {
    /// Linux's O_PATH (Glibc does not export it to Swift without _GNU_SOURCE).
    public static let O_PATH: Int32 = 0o10000000

    /// Whether the kernel takes `path` in one call.
    public static func fits(_ path: String) -> Bool { PathBytes.bytes(path).count < Int(PATH_MAX) }

    /// The open folder holding the last component of an absolute `path`, and that component's
    /// name; -1 with errno set when a folder on the way cannot be opened (or is a link).
    public static func parent(of path: String) -> (fd: Int32, name: [CChar]) {
        let bytes = PathBytes.bytes(path)
        guard bytes.first == UInt8(ascii: "/") else { errno = EINVAL; return (-1, []) }
        let components = bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true)
        guard let last = components.last else { errno = EINVAL; return (-1, []) }
        var fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return (-1, []) }
        for component in components.dropLast() {
            let name = component.map { CChar(bitPattern: $0) } + [0]
            let next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            let code = errno
            close(fd)
            guard next >= 0 else { errno = code; return (-1, []) }
            fd = next
        }
        return (fd, last.map { CChar(bitPattern: $0) } + [0])
    }

    /// `open(path, flags, mode)`, past PATH_MAX too.
    public static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        if fits(path) { return Glibc.open(PathBytes.cString(path), flags, mode) }
        let (folder, name) = parent(of: path)
        guard folder >= 0 else { return -1 }
        defer { let code = errno; close(folder); errno = code }
        return openat(folder, name, flags, mode)
    }

    /// `lstat(path)`, past PATH_MAX too.
    public static func lstat(_ path: String, _ info: inout stat) -> Int32 {
        if fits(path) { return Glibc.lstat(PathBytes.cString(path), &info) }
        let (folder, name) = parent(of: path)
        guard folder >= 0 else { return -1 }
        defer { let code = errno; close(folder); errno = code }
        return fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW)
    }

    /// Runs `body` with a path the kernel takes for the folder or file at `path`: the path itself,
    /// or `/proc/self/fd/N` of an `O_PATH` descriptor of it (inotify_add_watch follows that link to
    /// the object itself). -1 with errno from `body` or from the resolution.
    public static func withShortPath(_ path: String, _ body: ([CChar]) -> Int32) -> Int32 {
        if fits(path) { return body(PathBytes.cString(path)) }
        let fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return -1 }
        defer { let code = errno; close(fd); errno = code }
        return body(PathBytes.cString("/proc/self/fd/\(fd)"))
    }
}
