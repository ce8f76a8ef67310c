import Foundation

/// The `quarantine` program of the build the tests run from: the one `swift build` made beside
/// the running test bundle (`.build/debug` for `swift test`, `.build/tested/release` for
/// `make test`), found through `/proc/self/exe`. There is no fallback to another build's
/// program: a test run on an optimised build that spawned a debug binary would measure and test
/// something else (it did, unnoticed, while both existed).
public enum BuiltProgram {
    public static let quarantine: URL = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("quarantine")
    }()
}
