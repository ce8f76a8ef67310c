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
