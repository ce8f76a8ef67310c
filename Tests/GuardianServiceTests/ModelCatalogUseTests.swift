import Foundation
@testable import QuarantineBase
import SensitivityAnalysis
import Testing
@testable import GuardianService
@testable import QuarantineCore
@testable import QuarantineStore

/// The places that name the models take them from ``ModelCatalog/models`` (issue 29): a third
/// model added to the catalog cannot be missed by the store's basis of a given-up file, the video
/// cache key, or the guardian's copy of the runtime. Each is given the catalog's models plus a
/// stand-in entry (named so, a few bytes of its own), and must name the stand-in too.
@Suite("Model catalog: every place naming the models derives from it")
struct ModelCatalogUseTests {
    /// A stand-in model entry for `file` (not a model: bytes with their own pin).
    static func standIn(at file: String) throws -> ModelCatalog.Artifact {
        ModelCatalog.Artifact(name: "stand-in model (test)", fileName: (file as NSString).lastPathComponent,
                              sha256: try ModelCatalog.sha256(ofFileAt: file), wheel: "none", member: "none", platform: nil,
                              licence: "none", isRuntime: false)
    }

    /// A fresh folder with a stand-in model file in `models/`; the folder and the entry.
    static func standInFolder() throws -> (folder: String, artifact: ModelCatalog.Artifact) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("model-catalog-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder + "/models", withIntermediateDirectories: true)
        let file = folder + "/models/stand-in.onnx"
        try #require(FileManager.default.createFile(atPath: file, contents: Data("stand-in model \(UUID())".utf8)))
        return (folder, try standIn(at: file))
    }

    @Test("the store's basis and the video cache key name every model of the catalog, a stand-in one too")
    func basisAndCacheKey() throws {
        let (folder, standIn) = try Self.standInFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pin = String(standIn.sha256.prefix(12))
        // As the catalog is: every model's pin, and the basis as it has always been written
        // (given-up files recorded by an older build compare equal).
        for model in ModelCatalog.models {
            #expect(SeenFile.currentBasis.contains(String(model.sha256.prefix(12))), "\(model.name)")
            #expect(Intake.videoBasis(Settings()).contains(String(model.sha256.prefix(12))), "\(model.name)")
        }
        #expect(SeenFile.basis(program: "1-2") == "program 1-2, runtime \(ModelCatalog.runtime.sha256.prefix(12)), models "
                + ModelCatalog.models.map { String($0.sha256.prefix(12)) }.joined(separator: " "))
        // A model added to the catalog.
        let models = ModelCatalog.models + [standIn]
        #expect(SeenFile.basis(program: "1-2", models: models).hasSuffix(" " + pin))
        #expect(Intake.videoBasis(Settings(), models: models).contains("," + pin + " policy="))
        #expect(!SeenFile.basis(program: "1-2").contains(pin))
    }

    @Test("the guardian's copy of the runtime takes every pinned file of the catalog, a stand-in model too")
    func runtimeCopy() throws {
        let (folder, standIn) = try Self.standInFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let installed = ModelCatalog.standard()
        let catalog = ModelCatalog(runtimeDirectories: installed.runtimeDirectories, modelDirectories: installed.modelDirectories + [folder + "/models"])
        let runtime = folder + "/runtime"
        try GuardianSetup.copyRuntime(ModelCatalog.all + [standIn], from: catalog, into: runtime)
        for artifact in ModelCatalog.all + [standIn] {
            let copy = runtime + (artifact.isRuntime ? "/lib/" : "/models/") + artifact.fileName
            #expect(try ModelCatalog.sha256(ofFileAt: copy) == artifact.sha256, "\(artifact.name)")
        }
        #expect(ModelCatalog.all == [ModelCatalog.runtime] + ModelCatalog.models)
        #expect(ModelCatalog.all.filter { !$0.isRuntime } == SensitivityModels.all.map { $0.artifact }, "the analyzer's registry and the catalog's models differ")
    }
}
