import Foundation
import Testing
@testable import SensitivityAnalysis
import TestSupport

/// The models' optimised copies (``OptimizedModelCopy``): made once where a record can be kept,
/// used only while the folder's record vouches for them, the same outputs as the model's own session.
@Suite("Optimized model copies")
struct OptimizedModelCopyTests {
    /// NudeNet's model copied into a new private folder (0700, ours), and the runtime.
    static func folderWithModel() throws -> (folder: URL, model: String, runtime: OnnxRuntime) {
        let folder = try TestEnvironment.temporaryDirectory()
        #expect(chmod(folder.path, 0o700) == 0)
        let catalog = ModelCatalog.standard()
        let model = folder.appendingPathComponent("320n.onnx").path
        try FileManager.default.copyItem(atPath: try catalog.verified(ModelCatalog.nudeNet), toPath: model)
        return (folder, model, try OnnxRuntime(path: try catalog.verified(ModelCatalog.runtime)))
    }

    static func copies(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasPrefix(".320n.onnx.") }.sorted()
    }

    /// The detector's output for one fixed input.
    static func output(_ session: InferenceSession) throws -> [Float] {
        var input = [Float](repeating: 0, count: 3 * 320 * 320)
        for index in input.indices { input[index] = Float((index * 7919) % 251) / 251 }
        return try session.run(&input, shape: [1, 3, 320, 320])
    }

    @Test("the first session writes the copy and records it; the next is made from it, with the same outputs to the bit; doctor's way (no copy) writes none")
    func madeOnceThenUsed() throws {
        let (folder, model, runtime) = try Self.folderWithModel()
        defer { try? FileManager.default.removeItem(at: folder) }
        let checked = try InferenceSession(runtime: runtime, modelPath: model, intraOpThreads: 1, optimizedCopy: false)
        #expect(!checked.fromOptimizedCopy && Self.copies(in: folder).isEmpty)

        let first = try InferenceSession(runtime: runtime, modelPath: model, intraOpThreads: 1)
        #expect(!first.fromOptimizedCopy)
        let copies = Self.copies(in: folder)
        #expect(copies.count == 1 && copies[0].hasSuffix(".ort"), "\(copies)")
        let copy = try #require(OptimizedModelCopy(modelPath: model, runtimeVersion: runtime.version))
        #expect(copy.isVouchedFor)
        var info = stat()
        #expect(stat(copy.path, &info) == 0 && info.st_mode & 0o777 == 0o644)

        let second = try InferenceSession(runtime: runtime, modelPath: model, intraOpThreads: 1)
        #expect(second.fromOptimizedCopy)
        let (a, b, c) = (try Self.output(checked), try Self.output(first), try Self.output(second))
        #expect(a == b && b == c && a.count == 1 * 22 * 2100, "\(a.count) values")
        #expect(second.inputName == first.inputName && second.outputShape == first.outputShape)
    }

    /// Whether this process maps the file at `path` (listed in /proc/self/maps, "(deleted)" or not).
    /// Read to its end: `String(contentsOfFile:)` reads a /proc file's first 4 KiB only (it takes
    /// the size, 0, as a hint and stops after one read), and a test process's maps run to hundreds
    /// of KiB, so the copy's line was often past it.
    static func mapped(_ path: String) -> Bool {
        let maps = procFileText("/proc/self/maps") ?? ""
        return maps.split(separator: "\n").contains { $0.hasSuffix(" " + path) || $0.hasSuffix(" " + path + " (deleted)") }
    }

    @Test("a session from the copy reads it in place: mapped while the session lives, unmapped once it is released; the copy removed meanwhile changes nothing it answers")
    func readInPlace() throws {
        let (folder, model, runtime) = try Self.folderWithModel()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fromModel = try InferenceSession(runtime: runtime, modelPath: model, intraOpThreads: 1)
        let copy = try #require(OptimizedModelCopy(modelPath: model, runtimeVersion: runtime.version))
        #expect(!fromModel.fromOptimizedCopy && !Self.mapped(copy.path))
        var session: InferenceSession? = try InferenceSession(runtime: runtime, modelPath: model, intraOpThreads: 1)
        #expect(session?.fromOptimizedCopy == true)
        #expect(Self.mapped(copy.path), "the copy is not mapped")
        // Removed, as a newer copy's install removes it: the mapping keeps the file's bytes.
        #expect(unlink(copy.path) == 0)
        #expect(try Self.output(try #require(session)) == (try Self.output(fromModel)))
        session = nil
        #expect(!Self.mapped(copy.path), "still mapped after the session was released")
    }

    @Test("a copy changed after it was recorded is never used, but made again; a changed model names another copy, and the older one and a dead writer's partial copy are removed; none is made in a folder others can write")
    func neverTrustedBlindly() throws {
        let (folder, model, runtime) = try Self.folderWithModel()
        defer { try? FileManager.default.removeItem(at: folder) }
        _ = try InferenceSession(runtime: runtime, modelPath: model, intraOpThreads: 1)
        let copy = try #require(OptimizedModelCopy(modelPath: model, runtimeVersion: runtime.version))

        // Changed after it was recorded (here: cut short), even by its own user: not vouched for,
        // so the session comes from the model and the copy is written again.
        #expect(truncate(copy.path, 4096) == 0)
        #expect(!copy.isVouchedFor)
        let afterDamage = try InferenceSession(runtime: runtime, modelPath: model, intraOpThreads: 1)
        #expect(!afterDamage.fromOptimizedCopy && copy.isVouchedFor)
        #expect(try InferenceSession(runtime: runtime, modelPath: model, intraOpThreads: 1).fromOptimizedCopy)

        // A partial copy of a process that is gone, and one of a process still running.
        let dead = folder.appendingPathComponent(".320n.onnx.0123456789abcdef.ort.999999999.42.part").path
        let alive = folder.appendingPathComponent(".320n.onnx.0123456789abcdef.ort.\(getpid()).7.part").path
        for path in [dead, alive] { #expect(FileManager.default.createFile(atPath: path, contents: Data(count: 10))) }

        // The model changes (a new version of the file): another copy, the old one removed.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: model))
        try FileManager.default.removeItem(atPath: model)
        try bytes.write(to: URL(fileURLWithPath: model))
        let renewed = try #require(OptimizedModelCopy(modelPath: model, runtimeVersion: runtime.version))
        #expect(renewed.path != copy.path)
        #expect(!(try InferenceSession(runtime: runtime, modelPath: model, intraOpThreads: 1).fromOptimizedCopy))
        #expect(renewed.isVouchedFor && !FileManager.default.fileExists(atPath: copy.path))
        #expect(!FileManager.default.fileExists(atPath: dead) && FileManager.default.fileExists(atPath: alive), "\(Self.copies(in: folder))")

        // A folder others can write: no record is kept there, so no copy is made.
        try FileManager.default.removeItem(atPath: renewed.path)
        #expect(chmod(folder.path, 0o777) == 0)
        #expect(!renewed.canWrite)
        #expect(!(try InferenceSession(runtime: runtime, modelPath: model, intraOpThreads: 1).fromOptimizedCopy))
        #expect(!FileManager.default.fileExists(atPath: renewed.path), "\(Self.copies(in: folder))")
    }
}
