import Foundation
import SensitivityAnalysis

/// Where the repository's test inputs are, and the analyzer the tests share.
enum TestEnvironment {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let photos = repositoryRoot.appendingPathComponent("testdata/photos")
    static let golden = repositoryRoot.appendingPathComponent("Tests/Fixtures/golden.json")

    /// One analyzer (runtime and both models loaded once) for every test in the process.
    static let analyzer: Result<SensitivityAnalyzer, Error> = Result {
        try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 2, intraOpThreads: 1))
    }

    static func sharedAnalyzer() throws -> SensitivityAnalyzer { try analyzer.get() }

    /// A fresh temporary folder, removed by the caller.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// The upstream pipelines' recorded outputs (scripts/reference/golden.py).
struct Golden: Decodable {
    struct Entry: Decodable {
        struct Region: Decodable { var label: String; var score: Double; var box: [Double] }
        struct Debug: Decodable {
            struct Tensor: Decodable {
                var channel_mean: [Double]
                var at_cyx: [[Double]]?
                var at_yxc: [[Double]]?
            }
            var nudenet: Tensor
            var open_nsfw: Tensor
        }
        var file: String
        var sha256: String
        var width: Int
        var height: Int
        var nudenet: [Region]
        var nsfw: Double
        var debug: Debug?
    }
    var images: [Entry]

    static func load() throws -> Golden {
        try JSONDecoder().decode(Golden.self, from: Data(contentsOf: TestEnvironment.golden))
    }
}
