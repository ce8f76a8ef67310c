import Foundation

/// The ffmpeg command-line tool (installed by `make setup`), which tests use to make media.
public enum FFmpegTool {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Runs `ffmpeg -hide_banner -loglevel error -y ARGUMENTS`, throwing ffmpeg's own message on failure.
    public static func run(_ arguments: [String]) throws {
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

/// Extended attributes for tests, through the attr-less Python standard library
/// (os.setxattr / os.getxattr), so no extra package is needed.
extension FFmpegTool {
    public static func setExtendedAttribute(_ path: String, _ name: String, _ value: String) throws {
        try python("import os,sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode())", [path, name, value])
    }

    public static func extendedAttribute(_ path: String, _ name: String) -> String? {
        try? python("import os,sys; sys.stdout.write(os.getxattr(sys.argv[1], sys.argv[2]).decode())", [path, name])
    }

    @discardableResult
    static func python(_ code: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", code] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure(description: "python3 \(code) failed") }
        return text
    }
}
