import Foundation
import MediaDecoding
import QuarantineStore
import SensitivityAnalysis
import Testing

/// The vault's blurred preview says "something was here", it is not a picture of what was held:
/// the test card (square, 4:3, inside a larger frame) is not recognised in it.
@Suite("Blurred preview recognition")
struct PreviewRecognitionTests {
    @Test("the test card's preview, as the vault writes it (JPEG), is not the test card", arguments: [(1024, 1024), (1024, 768), (640, 1024)])
    func cardPreviewIsNotTheCard(width: Int, height: Int) throws {
        let card = TestCard.render(width: width, height: height)
        #expect(TestCard.recognises(card))
        let preview = try JPEGCodec.decode(try BlurredPreview.jpeg(from: card)).image
        let recognised = TestCard.recognises(preview)
        #expect(!recognised, "separation \(TestCard.separation(preview))")
        // The picture's own proportions (at 6 px, 6x5 for 4:3 made the preview 256x213).
        let expected = width >= height ? (256, Int((256.0 * Double(height) / Double(width)).rounded())) : (Int((256.0 * Double(width) / Double(height)).rounded()), 256)
        #expect(preview.width == expected.0 && preview.height == expected.1, "\(preview.width)x\(preview.height)")
    }

    @Test("a card covering most of a larger picture: its preview is not the test card either")
    func framedCardPreviewIsNotTheCard() throws {
        let background = RGBImage(width: 1200, height: 900, pixels: [UInt8](repeating: 90, count: 1200 * 900 * 3))
        let framed = TestCard.render(width: 800, height: 800, on: background, x: 200, y: 50)
        #expect(TestCard.recognises(framed))
        let preview = try JPEGCodec.decode(try BlurredPreview.jpeg(from: framed)).image
        let recognised = TestCard.recognises(preview)
        #expect(!recognised)
    }

    @Test("a preview of an older version (24 px, the card still recognised in it) is made again at 6 px when the vault is claimed, once; the item stays readable")
    func oldPreviewIsSoftenedAtClaim() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-old-preview-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let vault = try Vault(root: folder.appendingPathComponent("vault").path, store: AuditStore(path: folder.appendingPathComponent("audit.sqlite3").path))
        let card = TestCard.render()
        let file = folder.appendingPathComponent("card.png").path
        try Data(try PNGEncoder.encode(card)).write(to: URL(fileURLWithPath: file))
        let item = try vault.quarantine(path: file, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .adult, actor: "test", preview: card)
        let preview = try #require(vault.previewPath(of: item))
        // As an older version wrote it.
        try Data(try BlurredPreview.jpeg(from: card, side: 24)).write(to: URL(fileURLWithPath: preview))
        var recognised = TestCard.recognises(try JPEGCodec.decode([UInt8](Data(contentsOf: URL(fileURLWithPath: preview)))).image)
        #expect(recognised, "the old preview is the card")

        // The agent's claim, released when it stops (here: the end of this block).
        let softened = try { () throws -> Data in
            let claim = try vault.claim(waitingUpTo: 1)
            #expect(claim.softenedPreviews == 1)
            return try Data(contentsOf: URL(fileURLWithPath: preview))
        }()
        recognised = TestCard.recognises(try JPEGCodec.decode([UInt8](softened)).image)
        #expect(!recognised, "the old preview is still the card after the claim")
        var info = stat()
        #expect(lstat(preview, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(try vault.store.item(item.id!)?.previewName == item.previewName)
        #expect(FileManager.default.fileExists(atPath: vault.root + "/" + item.vaultName! + "/item"), "the item is where it was")
        // Once: a later claim leaves the previews alone.
        let again = try vault.claim(waitingUpTo: 1)
        #expect(again.softenedPreviews == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: preview)) == softened)
    }
}
