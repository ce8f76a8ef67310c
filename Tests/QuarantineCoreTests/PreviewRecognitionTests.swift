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
}
