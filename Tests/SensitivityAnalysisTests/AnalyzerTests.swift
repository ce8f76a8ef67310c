import Foundation
import MediaDecoding
import Testing
@testable import SensitivityAnalysis

/// The analyzer end to end on real models, and what happens when the installation is broken.
@Suite("Analyzer")
struct AnalyzerTests {
    @Test("the test card is flagged TEST_CARD in both modes", arguments: AnalysisMode.allCases)
    func testCardFlagged(mode: AnalysisMode) async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("card.jpg")
        try Data(try JPEGCodec.encode(TestCard.render(width: 800, height: 600), quality: 80)).write(to: url)
        // Models loaded at their first use: the card needs neither, so neither is loaded.
        let analyzer = try SensitivityAnalyzer(policy: .defaults(for: mode), configuration: .init(workers: 1), loading: .atFirstUse)
        let analysis = try await analyzer.analyzeImage(at: url)
        #expect(!analyzer.modelsLoaded, "the test card loaded the models")
        #expect(analysis.isSensitive)
        #expect(analysis.detections.map(\.label) == [TestCard.label])
        #expect(analysis.reasons == ["TEST_CARD 1.00"])
        #expect(analysis.mode == mode)
        #expect(analysis.width == 800 && analysis.height == 600)
        #expect(analysis.detections[0].box == Box(x: 0, y: 0, width: 800, height: 600))
    }

    @Test("the test card covering a quarter of a larger picture is flagged, its box where the card is")
    func testCardInsideAPicture() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("inset.jpg")
        let background = RGBImage(width: 1600, height: 1200, filledWith: (90, 120, 150))
        try Data(try JPEGCodec.encode(TestCard.render(width: 800, height: 600, on: background, x: 700, y: 500), quality: 85)).write(to: url)
        let analysis = try await TestEnvironment.sharedAnalyzer().analyzeImage(at: url)
        #expect(analysis.reasons == ["TEST_CARD 1.00"])
        let box = try #require(analysis.detections.first?.box)
        let expected = [700.0, 500, 800, 600], got = [box.x, box.y, box.width, box.height]
        #expect(zip(expected, got).allSatisfy { abs($0 - $1) <= 16 }, "box \(box)")
    }

    @Test("models loaded at first use: a file that is no picture leaves them unloaded; the first photo loads them and is judged as by an analyzer that loaded them at once")
    func modelsAtFirstUse() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let text = dir.appendingPathComponent("notes.txt")
        try Data("not a picture".utf8).write(to: text)
        let lazy = try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 1), loading: .atFirstUse)
        #expect(!lazy.modelsLoaded)
        let other = await lazy.report(forFileAt: text.path)
        #expect(other.kind == .other && !lazy.modelsLoaded)
        let photo = TestEnvironment.photos.appendingPathComponent("astronaut.png").path
        let judged = try await lazy.analyzeImage(at: photo)
        #expect(lazy.modelsLoaded)
        let eager = try await TestEnvironment.sharedAnalyzer().analyzeImage(at: photo)
        #expect(judged.detections == eager.detections && judged.nsfwScore == eager.nsfwScore && judged.reasons == eager.reasons)
        #expect(judged.nsfwScore != nil && !judged.detections.isEmpty)
    }

    @Test("the models are loaded once per process: analyzers that need the same files and threads share them while one holds them; other threads, another version of a file, or none left holding them: loaded anew")
    func modelsSharedInProcess() throws {
        func sessions(_ analyzer: SensitivityAnalyzer) throws -> SensitivityAnalyzer.LoadedModels.Loaded { try analyzer.models.get() }
        // Two intra-op threads: a key no other test uses, so no other analyzer keeps these alive.
        var first: SensitivityAnalyzer? = try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 1, intraOpThreads: 2))
        let second = try SensitivityAnalyzer(policy: .defaults(for: .child), configuration: .init(workers: 3, intraOpThreads: 2),
                                             videoOptions: VideoOptions(maxGap: 1))
        #expect(try sessions(first!) === sessions(second), "a second analyzer loaded the models again")
        let otherThreads = try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 1, intraOpThreads: 3))
        #expect(try sessions(otherThreads) !== sessions(second))

        // Held by `second` alone now: still shared. With no analyzer left, they go.
        first = nil
        weak var held = try sessions(second)
        let third = try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 1, intraOpThreads: 2))
        #expect(try sessions(third) === held)
        _ = consume third
        _ = consume second
        #expect(held == nil, "the models outlived every analyzer that held them")

        // Another version of one model's file (here a copy found first, as after an update): its own load.
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let standard = ModelCatalog.standard()
        try FileManager.default.copyItem(atPath: try standard.verified(ModelCatalog.nudeNet), toPath: dir.appendingPathComponent(ModelCatalog.nudeNet.fileName).path)
        let catalog = ModelCatalog(runtimeDirectories: standard.runtimeDirectories, modelDirectories: [dir.path] + standard.modelDirectories)
        let updated = try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 1, intraOpThreads: 3), catalog: catalog)
        #expect(try sessions(updated) !== sessions(otherThreads))
    }

    @Test("both models at once (a stream frame's judgement): the same detections and score as one after the other, on three photos")
    func modelsAtOnce() throws {
        let analyzer = try TestEnvironment.sharedAnalyzer()
        for name in ["astronaut.png", "coffee.png", "motorcycle_left.png"] {
            let decoded = try analyzer.decoder.decode(Array(try Data(contentsOf: TestEnvironment.photos.appendingPathComponent(name))))
            let identity = FileIdentity(device: 0, inode: 0, size: 0, modificationNanoseconds: 0)
            let atOnce = try analyzer.analyze(decoded, path: name, identity: identity, modelsAtOnce: true)
            let inTurn = try analyzer.analyze(decoded, path: name, identity: identity)
            #expect(atOnce.detections == inTurn.detections && atOnce.nsfwScore == inTurn.nsfwScore && atOnce.reasons == inTurn.reasons, "\(name)")
            #expect(atOnce.nsfwScore != nil)
        }
    }

    @Test("the models' stand-in (video plan tests): the card is flagged as by the real analyzer; a photo is clean with no model loaded or run")
    func modelsStandIn() async throws {
        let standIn = try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 1), modelsStandIn: true)
        let photo = try await standIn.analyzeImage(at: TestEnvironment.photos.appendingPathComponent("astronaut.png").path)
        #expect(!photo.isSensitive && photo.detections.isEmpty && photo.nsfwScore == nil)
        let card = TestCard.render(width: 320, height: 240)
        let decoded = DecodedImage(image: card, originalWidth: 320, originalHeight: 240, type: .png)
        let identity = FileIdentity(device: 0, inode: 0, size: 0, modificationNanoseconds: 0)
        let flagged = try standIn.analyze(decoded, path: "card", identity: identity)
        let real = try TestEnvironment.sharedAnalyzer().analyze(decoded, path: "card", identity: identity)
        #expect(flagged.isSensitive && flagged.reasons == real.reasons && flagged.detections == real.detections)
        #expect(!standIn.modelsLoaded, "the stand-in never loads the models")
    }

    @Test("a benign photo is analysed by both models and left alone")
    func benignPhoto() async throws {
        let analyzer = try TestEnvironment.sharedAnalyzer()
        let analysis = try await analyzer.analyzeImage(at: TestEnvironment.photos.appendingPathComponent("astronaut.png").path)
        #expect(!analysis.isSensitive)
        #expect(analysis.reasons.isEmpty)
        #expect(analysis.nsfwScore != nil)
        #expect(analysis.detections.contains { $0.label == "FACE_FEMALE" && $0.score > 0.7 })
    }

    @Test("a JPEG or PNG that ends early is judged on what arrived and reported partial: the card without its last bytes is flagged")
    func partialPictures() throws {
        let analyzer = try TestEnvironment.sharedAnalyzer()
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let card = TestCard.render(width: 640, height: 480)
        let jpeg = try JPEGCodec.encode(card, quality: 90)
        let png = try PNGEncoder.encode(card)
        for (name, bytes) in [("cut.jpg", Array(jpeg.dropLast(2))), ("cut.png", Array(png.dropLast(20)))] {
            let url = dir.appendingPathComponent(name)
            try Data(bytes).write(to: url)
            let report = analyzer.reportSynchronously(forFileAt: url.path)
            #expect(report.isSensitive, "\(name): \(String(describing: report.failure))")
            #expect(report.analysis?.partialReason?.contains("ends before") == true, "\(name)")
        }
        // Half a benign photo: no error, a clean verdict on the half, marked partial.
        let photo = try Data(contentsOf: TestEnvironment.photos.appendingPathComponent("astronaut__q50.jpg"))
        let half = dir.appendingPathComponent("half.jpg")
        try photo.prefix(photo.count / 2).write(to: half)
        let report = analyzer.reportSynchronously(forFileAt: half.path)
        #expect(report.failure == nil && report.analysis?.partialReason != nil && !report.isSensitive)
    }

    @Test("a failing file becomes a report with a reason, not a crash")
    func reportForBadFile() async throws {
        let analyzer = try TestEnvironment.sharedAnalyzer()
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("cut.jpg")
        let jpeg = try JPEGCodec.encode(TestCard.render(width: 400, height: 400), quality: 90)
        try Data(jpeg[0..<100]).write(to: url) // cut inside its header
        let report = await analyzer.report(forFileAt: url.path)
        #expect(report.analysis == nil)
        #expect(["truncated", "corrupt"].contains(report.failure?.code ?? ""))
        #expect(report.failure?.message.contains(url.path) == true)
        #expect(report.kind == .image)
        let text = dir.appendingPathComponent("readme.txt")
        try Data("hello".utf8).write(to: text)
        let other = await analyzer.report(forFileAt: text.path)
        #expect(other.kind == .other && other.failure == nil && other.analysis == nil)
    }

    @Test("policy reasons: labels over their thresholds, strongest first, open_nsfw last")
    func policyReasons() {
        let policy = SensitivityPolicy.defaults(for: .adult)
        let box = Box(x: 0, y: 0, width: 1, height: 1)
        let detections = [Detection(label: "FACE_FEMALE", score: 0.9, box: box),
                          Detection(label: "FEMALE_BREAST_EXPOSED", score: 0.83, box: box),
                          Detection(label: "BUTTOCKS_EXPOSED", score: 0.49, box: box),
                          Detection(label: "MALE_GENITALIA_EXPOSED", score: 0.91, box: box)]
        #expect(policy.reasons(detections: detections, nsfw: 0.91) == ["MALE_GENITALIA_EXPOSED 0.91", "FEMALE_BREAST_EXPOSED 0.83", "open_nsfw 0.91"])
        #expect(policy.reasons(detections: [], nsfw: 0.84).isEmpty)
        let child = SensitivityPolicy.defaults(for: .child)
        #expect(child.reasons(detections: [Detection(label: "BUTTOCKS_EXPOSED", score: 0.49, box: box)], nsfw: 0.6) == ["BUTTOCKS_EXPOSED 0.49", "open_nsfw 0.60"])
    }

    @Test("a missing model is named, with how to fix it")
    func missingModel() throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let catalog = ModelCatalog(runtimeDirectories: ModelCatalog.standard().runtimeDirectories, modelDirectories: [dir.path])
        do {
            _ = try SensitivityAnalyzer(policy: .defaults(for: .adult), catalog: catalog)
            Issue.record("analyzer loaded without models")
        } catch {
            #expect(error.code == .modelMissing)
            #expect(error.description.contains("320n.onnx") && error.description.contains("make setup"))
        }
    }

    @Test("a damaged model is refused by its sha256")
    func damagedModel() throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let standard = ModelCatalog.standard()
        for artifact in [ModelCatalog.nudeNet, ModelCatalog.openNSFW] {
            try FileManager.default.copyItem(atPath: try #require(standard.locate(artifact)), toPath: dir.appendingPathComponent(artifact.fileName).path)
        }
        let handle = try FileHandle(forWritingTo: dir.appendingPathComponent("320n.onnx"))
        try handle.seek(toOffset: 1000)
        try handle.write(contentsOf: Data([0xFF, 0xFF, 0xFF]))
        try handle.close()
        let catalog = ModelCatalog(runtimeDirectories: standard.runtimeDirectories, modelDirectories: [dir.path])
        do {
            _ = try SensitivityAnalyzer(policy: .defaults(for: .adult), catalog: catalog)
            Issue.record("analyzer loaded a damaged model")
        } catch {
            #expect(error.code == .modelMismatch)
            #expect(error.description.contains(ModelCatalog.nudeNet.sha256))
        }
    }

    @Test("a missing or foreign runtime library gives a typed error")
    func badRuntime() throws {
        do {
            _ = try OnnxRuntime(path: "/nonexistent/libonnxruntime.so")
            Issue.record("loaded a runtime that does not exist")
        } catch {
            #expect(error.code == .runtimeUnloadable)
            #expect(error.cause?.contains("dlopen") == true || error.cause?.contains("No such file") == true)
        }
        do {
            _ = try OnnxRuntime(path: "libz.so.1")
            Issue.record("took zlib for ONNX Runtime")
        } catch {
            #expect(error.code == .runtimeUnloadable)
            #expect(error.cause?.contains("OrtGetApiBase") == true)
        }
    }

    @Test("an ONNX Runtime error carries ORT's own message")
    func ortErrorMessage() throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bogus = dir.appendingPathComponent("bogus.onnx")
        try Data("this is not a protobuf".utf8).write(to: bogus)
        let runtime = try OnnxRuntime(path: try #require(ModelCatalog.standard().locate(ModelCatalog.runtime)))
        #expect(runtime.version == "1.31.1")
        do {
            _ = try InferenceSession(runtime: runtime, modelPath: bogus.path, intraOpThreads: 1)
            Issue.record("loaded a bogus model")
        } catch {
            #expect(error.operation == "CreateSession")
            #expect((error.cause ?? "").count > 10, "ORT's message: \(error.cause ?? "")")
        }
    }

    @Test("worker pools dropped again and again (each reload rebuilds the analyzer's) leave no thread behind")
    func droppedPoolsLeaveNoThreads() async throws {
        // Counted by name, so that threads of tests running beside this one do not count.
        func poolThreads() -> Int {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            return tasks.filter { task in
                ((try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? "").hasPrefix("droptest-")
            }.count
        }
        for _ in 0..<5 {
            let pool = WorkerPool(threads: 3, name: "droptest")
            #expect(try await pool.run { 1 } == 1)
        }
        let stopped = WorkerPool(threads: 2, name: "droptest")
        _ = try await stopped.run { 1 }
        stopped.shutdown()
        for _ in 0..<100 where poolThreads() > 0 { try await Task.sleep(for: .milliseconds(20)) }
        #expect(poolThreads() == 0, "threads of dropped pools still running: \(poolThreads())")
        withExtendedLifetime(stopped) {}
    }

    @Test("the pins are written once: scripts/setup.sh reads exactly ModelCatalog's (through scripts/pins.py)")
    func pinsHaveOneSource() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [TestEnvironment.repositoryRoot.appendingPathComponent("scripts/pins.py").path]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let expected = ModelCatalog.all.map {
            [$0.isRuntime ? "runtime" : "model", $0.fileName, $0.sha256, $0.wheel, $0.member, $0.platform ?? "-"].joined(separator: " ")
        }
        #expect(text.split(separator: "\n").map(String.init) == expected)
        let setup = try String(contentsOf: TestEnvironment.repositoryRoot.appendingPathComponent("scripts/setup.sh"), encoding: .utf8)
        for artifact in ModelCatalog.all {
            #expect(!setup.contains(artifact.sha256), "setup.sh carries its own copy of \(artifact.fileName)'s pin")
        }
    }

    @Test("the model registry: each model's declared input is what its pinned file takes")
    func modelRegistry() throws {
        let catalog = ModelCatalog.standard()
        let runtime = try OnnxRuntime(path: try catalog.verified(ModelCatalog.runtime))
        #expect(ModelCatalog.all.map(\.fileName) == [ModelCatalog.runtime.fileName] + SensitivityModels.all.map { $0.artifact.fileName })
        for model in SensitivityModels.all {
            let session = try InferenceSession(runtime: runtime, modelPath: try catalog.verified(model.artifact), intraOpThreads: 1)
            #expect(session.inputShape.count == model.inputShape.count, "\(model.displayName)")
            for (declared, ours) in zip(session.inputShape, model.inputShape) where declared != -1 {
                #expect(declared == ours, "\(model.displayName): \(session.inputShape) vs \(model.inputShape)")
            }
        }
    }
}
