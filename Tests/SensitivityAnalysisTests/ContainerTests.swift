import Foundation
import MediaDecoding
import Testing
import TestSupport
@testable import SensitivityAnalysis

/// Containers (issue 30): the card inside every kind is found and named, the benign twin is
/// not flagged, and hostile containers are refused by their bounds without extracting anything.
@Suite("Containers")
struct ContainerTests {
    /// Every container of Tests/Fixtures/make_containers.py, made once per test process (and cached
    /// by content: ``FixtureCache``).
    static let fixtures: Result<URL, Error> = Result {
        let folder = try TestEnvironment.temporaryDirectory()
        let card = folder.appendingPathComponent("card.jpg")
        try Data(JPEGCodec.encode(TestCard.render(width: 768, height: 768), quality: 90)).write(to: card)
        let photo = TestEnvironment.photos.appendingPathComponent("astronaut__q50.jpg")
        let output = folder.appendingPathComponent("made").path
        let arguments = [TestEnvironment.repositoryRoot.appendingPathComponent("Tests/Fixtures/make_containers.py").path, card.path, photo.path, output]
        try FixtureCache.run("/usr/bin/python3", arguments, output: output, setUp: "make_containers.py needs python3, bsdtar, qpdf: make setup")
        return URL(fileURLWithPath: output)
    }

    func report(_ name: String, mode: AnalysisMode = .adult, analyzer: SensitivityAnalyzer? = nil) async throws -> FileReport {
        let path = try Self.fixtures.get().appendingPathComponent(name).path
        return await (try analyzer ?? TestEnvironment.sharedAnalyzer()).report(forFileAt: path, policy: .defaults(for: mode))
    }

    static let kinds: [(file: String, type: MediaType, entry: String)] = [
        ("zip", .zip, "photos/pic.jpg"), ("cbz", .zip, "002.jpg"), ("epub", .zip, "OEBPS/images/pic.jpg"),
        ("docx", .zip, "word/media/image1.jpeg"), ("pptx", .zip, "ppt/media/image1.jpeg"), ("odt", .zip, "Pictures/10000000.jpg"),
        ("tar", .tar, "album/pic.jpg"), ("tar.gz", .gzip, "album/pic.jpg"), ("tar.xz", .xz, "album/pic.jpg"),
        ("tar.bz2", .bzip2, "album/pic.jpg"), ("tar.zst", .zstd, "pic.jpg"), ("7z", .sevenZip, "pic.jpg"),
        ("rar", .rar, "album/pic.jpg"),
        ("-nested.zip", .zip, "inner/album.zip/pic.jpg"),
    ]

    @Test("the card inside each kind is flagged, named by its entry; the benign twin is not",
          arguments: kinds)
    func cardInside(kind: (file: String, type: MediaType, entry: String)) async throws {
        let suffix = kind.file.hasPrefix("-") ? kind.file : "." + kind.file
        let flagged = try await report("card" + suffix)
        #expect(flagged.failure == nil, "\(flagged.failure?.message ?? "")")
        #expect(flagged.kind == .container && flagged.type == kind.type)
        #expect(flagged.isSensitive)
        #expect(flagged.analysis?.reasons == ["TEST_CARD 1.00 in \(kind.entry)"])
        #expect(flagged.analysis?.entries?.last?.name == kind.entry)
        #expect(flagged.flaggedFrame != nil, "the preview is made from the flagged entry")
        let document = ["epub": "EPUB", "docx": "DOCX", "pptx": "PPTX", "odt": "OpenDocument text"][kind.file]
        #expect(flagged.analysis?.document == document, "recognised as \(document ?? "a plain archive") by its own markers")
        let clean = try await report("clean" + suffix)
        #expect(clean.failure == nil, "\(clean.failure?.message ?? "")")
        #expect(clean.kind == .container && !clean.isSensitive)
        #expect((clean.analysis?.entries?.count ?? 0) >= 1, "the benign photo inside was judged")
    }

    @Test("a single compressed picture is judged as the picture")
    func compressedPicture() async throws {
        let flagged = try await report("card.jpg.gz")
        #expect(flagged.type == .gzip && flagged.isSensitive)
    }

    @Test("a video inside a zip is judged as a video: the card shown for half a second in a 3-s clip is flagged at its time; the clean clip is not")
    func videoEntry() async throws {
        let folder = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let card = folder.appendingPathComponent("clip-card.mp4"), clean = folder.appendingPathComponent("clip-clean.mp4")
        try ShortClipTests.clip(card, seconds: 3, cardFrom: 1.2)
        try ShortClipTests.clip(clean, seconds: 3, cardFrom: nil)
        let zipped = try Spawned.run("/usr/bin/python3", ["-c", "import sys, zipfile\nfor out, clip in ((sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])):\n"
                                     + "    with zipfile.ZipFile(out, 'w') as z: z.write(clip, 'clips/movie.mp4')",
                                     folder.appendingPathComponent("card.zip").path, card.path, folder.appendingPathComponent("clean.zip").path, clean.path],
                                     environment: ProcessInfo.processInfo.environment, timeout: 60)
        try #require(zipped.status == 0)
        let analyzer = try TestEnvironment.sharedAnalyzer()
        let flagged = await analyzer.report(forFileAt: folder.appendingPathComponent("card.zip").path, policy: .defaults(for: .adult))
        #expect(flagged.isSensitive, "\(flagged.failure?.message ?? "")")
        #expect(flagged.analysis?.reasons.first?.hasSuffix(" in clips/movie.mp4") == true, "\(flagged.analysis?.reasons ?? [])")
        #expect((1.0...1.8).contains(flagged.analysis?.frameTime ?? -1), "flagged at \(flagged.analysis?.frameTime ?? -1)")
        #expect(flagged.analysis?.entries?.last?.type == .mp4)
        let cleanReport = await analyzer.report(forFileAt: folder.appendingPathComponent("clean.zip").path, policy: .defaults(for: .adult))
        #expect(cleanReport.failure == nil && !cleanReport.isSensitive, "\(cleanReport.failure?.message ?? "")")
    }

    @Test("PDF: the card as page 2 and drawn small on page 2 are found; the benign twin is not")
    func pdf() async throws {
        let page = try await report("card.pdf")
        #expect(page.type == .pdf && page.isSensitive)
        #expect(page.analysis?.reasons == ["TEST_CARD 1.00 on page 2"])
        #expect(page.analysis?.pages == 2 && page.analysis?.pagesJudged == 2)
        let small = try await report("card-small.pdf")
        #expect(small.isSensitive)
        #expect(small.analysis?.reasons == ["TEST_CARD 1.00 in an image on page 2"])
        let clean = try await report("clean.pdf")
        #expect(clean.failure == nil && !clean.isSensitive)
        #expect(clean.analysis?.pages == 2 && clean.analysis?.coverage == 1)
        let cleanSmall = try await report("clean-small.pdf")
        #expect(cleanSmall.failure == nil && !cleanSmall.isSensitive)
    }

    @Test("an entry that expands 1000 times is refused as a bomb, while it expands")
    func bombEntry() async throws {
        let report = try await report("bomb-entry.zip")
        #expect(report.failure?.code == MediaError.Code.containerLimit.rawValue, "\(report.failure?.message ?? "no failure")")
        #expect(report.failure?.message.contains("containers.ratio") == true)
    }

    @Test("a tar.gz of zeros is refused while it is read through")
    func bombStream() async throws {
        let report = try await report("bomb.tar.gz")
        #expect(report.failure?.code == MediaError.Code.containerLimit.rawValue, "\(report.failure?.message ?? "no failure")")
    }

    @Test("zips of zips past the depth limit are refused, naming where")
    func bombNested() async throws {
        let report = try await report("bomb-nested.zip")
        #expect(report.failure?.code == MediaError.Code.containerLimit.rawValue, "\(report.failure?.message ?? "no failure")")
        let message = report.failure?.message ?? ""
        #expect(message.contains("containers.depth") && !message.contains("\u{0}"), "\(message)")
    }

    @Test("encrypted zip and PDF cannot be checked, and say so")
    func encrypted() async throws {
        for name in ["encrypted.zip", "encrypted.pdf"] {
            let report = try await report(name)
            #expect(report.failure?.code == MediaError.Code.encrypted.rawValue, "\(name): \(report.failure?.message ?? "no failure")")
            #expect(!report.isSensitive)
        }
    }

    @Test("truncated containers: an error, never a clean verdict")
    func truncated() async throws {
        for name in ["truncated.zip", "truncated.pdf", "truncated.tar.gz"] {
            let report = try await report(name)
            #expect(report.failure != nil, "\(name) came back clean")
        }
    }

    @Test("names that try ../ and absolute paths are only names: nothing is written anywhere")
    func traversal() async throws {
        let report = try await report("traversal.zip")
        #expect(report.isSensitive)
        #expect(report.analysis?.reasons == ["TEST_CARD 1.00 in ../../../../tmp/quarantine-traversal.jpg"])
        #expect(!FileManager.default.fileExists(atPath: "/tmp/quarantine-traversal.jpg"))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/quarantine-absolute.jpg"))
    }

    @Test("the entries bound: an archive with more entries than allowed is refused")
    func entriesBound() async throws {
        var configuration = SensitivityAnalyzer.Configuration(workers: 1)
        configuration.limits.containers.maxEntries = 1
        let analyzer = try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: configuration, loading: .atFirstUse)
        let report = try await report("clean.zip", analyzer: analyzer)
        #expect(report.failure?.code == MediaError.Code.containerLimit.rawValue)
        #expect(report.failure?.message.contains("containers.entries") == true)
    }

    @Test("recognised by content, never by name")
    func byContent() throws {
        let folder = try Self.fixtures.get()
        for (name, type) in [("card.docx", MediaType.zip), ("card.pdf", .pdf), ("card.7z", .sevenZip), ("card.tar", .tar), ("card.tar.xz", .xz)] {
            let renamed = try TestEnvironment.temporaryDirectory().appendingPathComponent("holiday.txt")
            try FileManager.default.copyItem(at: folder.appendingPathComponent(name), to: renamed)
            #expect(try MediaFile(path: renamed.path).type == type, "\(name)")
        }
    }

    @Test("PDF page plan: every page of the first 200, then an even spread, 300 in all")
    func pagePlan() {
        let limits = ContainerLimits()
        #expect(limits.pagePlan(count: 12) == Array(0..<12))
        let long = limits.pagePlan(count: 5_000)
        #expect(long.count == 300 && Array(long.prefix(200)) == Array(0..<200) && long.last == 4_999)
        #expect(Set(long).count == long.count && long == long.sorted())
        #expect(limits.pagePlan(count: 250) == Array(0..<250))
    }
}
