import CSystemShims
import Foundation

/// The ffmpeg command-line tool (installed by `make setup`), which tests use to make media.
public enum FFmpegTool {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Runs `ffmpeg -hide_banner -loglevel error -y ARGUMENTS` (the last argument is the output
    /// file), throwing ffmpeg's own message on failure.
    ///
    /// Outputs are cached by content (``FixtureCache``: the arguments, the output by its extension
    /// only, and the sha256 of every input file they name), so a fixture is encoded once per
    /// machine and later runs copy it.
    ///
    /// `cached: false` for a fixture drawn at random (a card at a random time): it would never be
    /// asked for again, so it is made afresh and neither kept nor recorded as a recipe.
    public static func run(_ arguments: [String], cached: Bool = true) throws {
        guard cached, let output = arguments.last else { return try encode(arguments) }
        try FixtureCache.make(program: "/usr/bin/ffmpeg", arguments: arguments, output: output) { try encode(arguments) }
    }

    static func encode(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        process.arguments = ["-hide_banner", "-loglevel", "error", "-y"] + arguments
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "ffmpeg \(arguments.joined(separator: " ")) failed: \(String(decoding: message, as: UTF8.self))")
        }
    }
}

/// Extended attributes for tests, through the C library's fsetxattr and fgetxattr (a Python process
/// each, as before, cost 10 to 95 ms of CPU: more where `python3` is a pyenv shim).
extension FFmpegTool {
    public static func setExtendedAttribute(_ path: String, _ name: String, _ value: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: "open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(value.utf8)
        guard qsys_fsetxattr(fd, name, bytes, bytes.count) == 0 else {
            throw Failure(description: "setxattr \(name) on \(path): \(String(cString: strerror(errno)))")
        }
    }

    public static func extendedAttribute(_ path: String, _ name: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let size = qsys_fgetxattr(fd, name, nil, 0)
        guard size >= 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        let got = qsys_fgetxattr(fd, name, &bytes, size)
        guard got >= 0 else { return nil }
        return String(decoding: bytes.prefix(got), as: UTF8.self)
    }
}
