import Glibc
import PathBytes

/// The parts of `lstat` the watcher needs.
struct FileStatus: Equatable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modificationNanoseconds: Int64
    var changeNanoseconds: Int64
    var mode: UInt32
    var owner: UInt32
    var group: UInt32

    var isRegularFile: Bool { mode & S_IFMT == S_IFREG }
    var isDirectory: Bool { mode & S_IFMT == S_IFDIR }
    var isSymbolicLink: Bool { mode & S_IFMT == S_IFLNK }

    init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        modificationNanoseconds = Int64(st.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(st.st_mtim.tv_nsec)
        changeNanoseconds = Int64(st.st_ctim.tv_sec) &* 1_000_000_000 &+ Int64(st.st_ctim.tv_nsec)
        mode = UInt32(st.st_mode)
        owner = UInt32(st.st_uid)
        group = UInt32(st.st_gid)
    }

    /// `lstat(path)`: never follows a symbolic link (past PATH_MAX too). `errno` on failure.
    static func lstatus(_ path: String) -> Result<FileStatus, Errno> {
        var st = stat()
        if LongPaths.lstat(path, &st) != 0 { return .failure(Errno(errno)) }
        return .success(FileStatus(st))
    }

    /// `stat(path)`: follows symbolic links (used for roots only).
    static func status(_ path: String) -> Result<FileStatus, Errno> {
        var st = stat()
        if stat(PathBytes.cString(path), &st) != 0 { return .failure(Errno(errno)) }
        return .success(FileStatus(st))
    }

    /// Same file, same content as far as size and modification time tell.
    func sameContent(as other: FileStatus) -> Bool {
        device == other.device && inode == other.inode && size == other.size
            && modificationNanoseconds == other.modificationNanoseconds && changeNanoseconds == other.changeNanoseconds
            && mode == other.mode
    }
}

/// An errno value as an Error.
struct Errno: Error, Equatable {
    var code: Int32
    init(_ code: Int32) { self.code = code }
    var text: String { errnoName(code) }
}

/// One entry of a directory listing.
struct DirectoryEntry {
    enum Kind { case directory, regular, symbolicLink, other, unknown }
    var name: String
    var kind: Kind
}

/// Lists a directory (without "." and ".."). `errno` if it cannot be opened.
func listDirectory(_ path: String) -> Result<[DirectoryEntry], Errno> {
    // Past PATH_MAX too: opened by descriptor, one component at a time.
    let fd = LongPaths.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { return .failure(Errno(errno)) }
    guard let dir = fdopendir(fd) else { let code = errno; close(fd); return .failure(Errno(code)) }
    defer { closedir(dir) }
    var entries: [DirectoryEntry] = []
    while true {
        errno = 0
        guard let entry = readdir(dir) else {
            if errno != 0 && entries.isEmpty { return .failure(Errno(errno)) }
            break
        }
        let name = withUnsafePointer(to: &entry.pointee.d_name) {
            PathBytes.string(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
        }
        if name == "." || name == ".." { continue }
        let kind: DirectoryEntry.Kind
        switch Int32(entry.pointee.d_type) {
        case Int32(DT_DIR): kind = .directory
        case Int32(DT_REG): kind = .regular
        case Int32(DT_LNK): kind = .symbolicLink
        case Int32(DT_UNKNOWN): kind = .unknown
        default: kind = .other
        }
        entries.append(DirectoryEntry(name: name, kind: kind))
    }
    return .success(entries)
}

/// `path` + "/" + `name`, without doubling the slash for "/".
func joinPath(_ path: String, _ name: String) -> String {
    path.hasSuffix("/") ? path + name : path + "/" + name
}

/// True when `path` is `ancestor` or lies under it.
func isPath(_ path: String, inside ancestor: String) -> Bool {
    if path == ancestor { return true }
    if ancestor == "/" { return path.hasPrefix("/") }
    return path.hasPrefix(ancestor) && path.utf8.dropFirst(ancestor.utf8.count).first == UInt8(ascii: "/")
}

/// An absolute path without "." / ".." components, duplicate or trailing slashes.
func normalizePath(_ path: String) -> String {
    var absolute = path
    if !absolute.hasPrefix("/") {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        if getcwd(&buffer, buffer.count) != nil {
            absolute = joinPath(stringFromCBuffer(buffer), absolute)
        }
    }
    var parts: [Substring] = []
    for part in absolute.split(separator: "/", omittingEmptySubsequences: true) {
        if part == "." { continue }
        if part == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
        parts.append(part)
    }
    return "/" + parts.joined(separator: "/")
}

/// The file descriptors of this process that are inotify instances (from /proc/self/fd).
func inotifyDescriptorsOfThisProcess() -> Set<Int32> {
    var result: Set<Int32> = []
    guard case .success(let entries) = listDirectory("/proc/self/fd") else { return result }
    var buffer = [CChar](repeating: 0, count: 256)
    for entry in entries {
        guard let fd = Int32(entry.name) else { continue }
        let count = readlink("/proc/self/fd/\(entry.name)", &buffer, buffer.count - 1)
        guard count > 0 else { continue }
        let target = buffer.withUnsafeBufferPointer { pointer in
            String(decoding: UnsafeRawBufferPointer(start: pointer.baseAddress, count: count), as: UTF8.self)
        }
        if target == "anon_inode:inotify" { result.insert(fd) }
    }
    return result
}

/// Reads a small integer file such as /proc/sys/fs/inotify/max_user_watches.
func readIntegerFile(_ path: String) -> Int? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var value: Int = 0
    guard fscanf_int(file, &value) else { return nil }
    return value
}

private func fscanf_int(_ file: UnsafeMutablePointer<FILE>, _ value: inout Int) -> Bool {
    var buffer = [CChar](repeating: 0, count: 64)
    guard fgets(&buffer, Int32(buffer.count), file) != nil else { return false }
    let text = stringFromCBuffer(buffer)
    guard let number = Int(text.trimmingCharacters(in: " \n\t")) else { return false }
    value = number
    return true
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        let characters = Set(set)
        var slice = Substring(self)
        while let first = slice.first, characters.contains(first) { slice.removeFirst() }
        while let last = slice.last, characters.contains(last) { slice.removeLast() }
        return String(slice)
    }
}

/// The NUL-terminated text at the start of `buffer`.
func stringFromCBuffer(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
