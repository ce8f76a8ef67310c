import Foundation
import PathBytes

/// Expands the paths given on the command line into files: folders recursively, symbolic
/// links never followed (a link named on the command line is reported, not read).
struct FileWalker {
    enum Entry {
        case file(String)
        case problem(path: String, code: String, message: String)
    }

    /// Symbolic links met inside folders and passed over.
    private(set) var skippedLinks = 0

    mutating func expand(_ paths: [String]) -> [Entry] {
        var out: [Entry] = []
        for path in paths { walk(path, top: true, into: &out) }
        return out
    }

    private mutating func walk(_ path: String, top: Bool, into out: inout [Entry]) {
        var info = stat()
        guard lstat(PathBytes.cString(path), &info) == 0 else {
            let code = errno
            out.append(.problem(path: path, code: code == ENOENT ? "not_found" : "io_error",
                                message: "\(path): \(code == ENOENT ? "no such file or folder" : String(cString: strerror(code)))"))
            return
        }
        switch info.st_mode & S_IFMT {
        case S_IFLNK:
            if top {
                out.append(.problem(path: path, code: "symbolic_link", message: "\(path): is a symbolic link; links are never followed"))
            } else {
                skippedLinks += 1
            }
        case S_IFDIR:
            guard let dir = opendir(PathBytes.cString(path)) else {
                out.append(.problem(path: path, code: "permission_denied", message: "\(path): cannot list folder: \(String(cString: strerror(errno)))"))
                return
            }
            var names: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    PathBytes.string(cString: raw.bindMemory(to: CChar.self).baseAddress!)
                }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(dir)
            let base = path.hasSuffix("/") ? path : path + "/"
            for name in names.sorted() { walk(base + name, top: false, into: &out) }
        case S_IFREG:
            out.append(.file(path))
        default:
            if top { out.append(.problem(path: path, code: "not_regular_file", message: "\(path): is not a regular file")) }
        }
    }
}
