import Foundation
import MediaDecoding
import Testing
import TestSupport
@testable import SensitivityAnalysis

/// The synthetic test card: always recognised, whatever happens to it on the way, and never in
/// a natural photo.
@Suite("Test card")
struct TestCardTests {
    static let card = TestCard.render(width: 1024, height: 1024)

    @Test func recognisedAsRendered() {
        #expect(TestCard.recognises(Self.card))
        #expect(TestCard.separation(Self.card) > 200)
    }

    @Test("every channel is on in exactly half the cells")
    func balancedPattern() {
        for channel in TestCard.pattern { #expect(channel.filter { $0 }.count == 32) }
        #expect(TestCard.pattern[0] != TestCard.pattern[1] && TestCard.pattern[1] != TestCard.pattern[2])
    }

    @Test("recognised after JPEG at quality 50")
    func jpegQuality50() throws {
        let jpeg = try JPEGCodec.encode(Self.card, quality: 50)
        let decoded = try ImageDecoder(minimumLongSide: 0, minimumShortSide: 0).decode(jpeg)
        #expect(TestCard.recognises(decoded.image), "separation \(TestCard.separation(decoded.image))")
    }

    @Test("recognised after scaling to 25 %, then JPEG at quality 50")
    func scaledQuarter() throws {
        let small = Self.card.resizedPillowBilinear(width: 256, height: 256)
        #expect(TestCard.recognises(small))
        let jpeg = try JPEGCodec.encode(small, quality: 50)
        let decoded = try ImageDecoder(minimumLongSide: 0, minimumShortSide: 0).decode(jpeg)
        #expect(TestCard.recognises(decoded.image), "separation \(TestCard.separation(decoded.image))")
    }

    @Test("recognised at non-square sizes, as a 4032x3024 photo would be")
    func nonSquare() throws {
        let wide = TestCard.render(width: 4032, height: 3024)
        let jpeg = try JPEGCodec.encode(wide, quality: 85)
        let decoded = try ImageDecoder(minimumLongSide: 640, minimumShortSide: 512).decode(jpeg)
        #expect(decoded.image.width < 4032, "decoded with DCT scaling")
        #expect(TestCard.recognises(decoded.image))
    }

    @Test("recognised in a frame of an H.264 video")
    func h264Frame() throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let png = dir.appendingPathComponent("card.png"), video = dir.appendingPathComponent("card.mp4"), frame = dir.appendingPathComponent("frame.png")
        try Data(try PNGEncoder.encode(TestCard.render(width: 640, height: 360))).write(to: png)
        try runFFmpeg(["-loop", "1", "-i", png.path, "-t", "2", "-r", "25", "-c:v", "libx264", "-preset", "veryfast", "-crf", "30",
                       "-pix_fmt", "yuv420p", video.path])
        try runFFmpeg(["-ss", "1", "-i", video.path, "-frames:v", "1", frame.path])
        let decoded = try ImageDecoder(minimumLongSide: 0, minimumShortSide: 0).decode(try MediaFile(path: frame.path))
        #expect(TestCard.recognises(decoded.image), "separation \(TestCard.separation(decoded.image))")
    }

    @Test("never recognised in the natural photos")
    func neverInNaturalPhotos() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: TestEnvironment.photos.path).sorted()
        #expect(names.count >= 40, "run 'make testdata'")
        var strongest = -Double.infinity
        for name in names {
            let decoded = try ImageDecoder().decode(try MediaFile(path: TestEnvironment.photos.appendingPathComponent(name).path))
            let separation = TestCard.separation(decoded.image)
            strongest = max(strongest, separation)
            #expect(!TestCard.recognises(decoded.image), "\(name) taken for the test card")
        }
        // Photos do not even separate the cells: the margin to the threshold (64) is wide.
        #expect(strongest < 0, "strongest photo separation \(strongest)")
    }

    @Test("a picture of the card in a different arrangement is not the card")
    func otherArrangementsAreNot() {
        var shifted = [UInt8]()
        let card = TestCard.render(width: 256, height: 256)
        // Shift by one cell: same colours, wrong places.
        for y in 0..<256 { for x in 0..<256 { let sx = (x + 32) % 256; let p = (y * 256 + sx) * 3; shifted += card.pixels[p..<(p + 3)] } }
        #expect(!TestCard.recognises(RGBImage(width: 256, height: 256, pixels: shifted)))
        #expect(!TestCard.recognises(RGBImage(width: 256, height: 256, filledWith: (128, 128, 128))))
    }

    func runFFmpeg(_ arguments: [String]) throws { try FFmpegTool.run(arguments) }
}
