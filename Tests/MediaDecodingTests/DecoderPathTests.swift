import Foundation
import Testing
import TestSupport
@testable import MediaDecoding

/// Every decoder path produces the right pixels, in the right place, in RGB order.
@Suite("Decoder paths", .ownThread)
struct DecoderPathTests {
    let decoder = ImageDecoder(minimumLongSide: 0, minimumShortSide: 0)

    func assertQuadrants(_ image: RGBImage, tolerance: Int = 40, sourceLocation: SourceLocation = #_sourceLocation) {
        let w = image.width, h = image.height
        #expect(Fixtures.close(Fixtures.pixel(image, w / 4, h / 4), (255, 0, 0), tolerance: tolerance), "top-left not red", sourceLocation: sourceLocation)
        #expect(Fixtures.close(Fixtures.pixel(image, 3 * w / 4, h / 4), (0, 255, 0), tolerance: tolerance), "top-right not green", sourceLocation: sourceLocation)
        #expect(Fixtures.close(Fixtures.pixel(image, w / 4, 3 * h / 4), (0, 0, 255), tolerance: tolerance), "bottom-left not blue", sourceLocation: sourceLocation)
        #expect(Fixtures.close(Fixtures.pixel(image, 3 * w / 4, 3 * h / 4), (255, 255, 255), tolerance: tolerance), "bottom-right not white", sourceLocation: sourceLocation)
    }

    @Test func jpegRoundTrip() throws {
        let jpeg = try JPEGCodec.encode(Fixtures.quadrants(), quality: 95)
        #expect(MediaType.sniff(jpeg) == .jpeg)
        let decoded = try decoder.decode(jpeg)
        #expect(decoded.image.width == 64 && decoded.image.height == 48)
        assertQuadrants(decoded.image)
    }

    @Test("EXIF orientation is applied", arguments: [1, 2, 3, 4, 5, 6, 7, 8])
    func exifOrientation(orientation: Int) throws {
        let source = Fixtures.quadrants()
        let jpeg = Fixtures.jpegWithOrientation(try JPEGCodec.encode(source, quality: 95), orientation: UInt16(orientation))
        let decoded = try decoder.decode(jpeg)
        let expected = source.applyingOrientation(orientation)
        #expect(decoded.originalWidth == expected.width && decoded.originalHeight == expected.height)
        #expect(decoded.image.width == expected.width)
        for (fx, fy) in [(0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)] {
            let x = Int(fx * Double(expected.width)), y = Int(fy * Double(expected.height))
            #expect(Fixtures.close(Fixtures.pixel(decoded.image, x, y), Fixtures.pixel(expected, x, y)))
        }
    }

    @Test("orientation 6 turns a landscape picture upright: red ends top-right")
    func orientationSixIsClockwise() {
        let turned = Fixtures.quadrants().applyingOrientation(6)
        #expect(turned.width == 48 && turned.height == 64)
        #expect(Fixtures.pixel(turned, 3 * 48 / 4, 64 / 4) == (255, 0, 0))
        #expect(Fixtures.pixel(turned, 48 / 4, 64 / 4) == (0, 0, 255))
    }

    @Test func cmykJPEG() throws {
        let rgb = Fixtures.quadrants()
        var cmyk = [UInt8]()
        for p in 0..<(rgb.width * rgb.height) {
            // Adobe inverted CMYK: stored values are 255 - ink; K = 255 means no black ink.
            cmyk += [rgb.pixels[p * 3], rgb.pixels[p * 3 + 1], rgb.pixels[p * 3 + 2], 255]
        }
        let jpeg = try JPEGCodec.encodeCMYK(cmyk, width: rgb.width, height: rgb.height, quality: 95)
        let header = try JPEGCodec.header(jpeg)
        #expect(header.colorspace == 4 /* TJCS_YCCK */ || header.colorspace == 3 /* TJCS_CMYK */)
        assertQuadrants(try decoder.decode(jpeg).image)
    }

    @Test("DCT scaling picks the smallest scale that keeps both minimums")
    func dctScaling() throws {
        let big = RGBImage(width: 2016, height: 1512, filledWith: (200, 100, 50))
        let jpeg = try JPEGCodec.encode(big, quality: 80)
        let scaled = try ImageDecoder(minimumLongSide: 640, minimumShortSide: 512).decode(jpeg)
        #expect(scaled.originalWidth == 2016 && scaled.originalHeight == 1512)
        // 1/2 gives 1008x756; 3/8 would give 756x567, also fine; 1/4 gives 504x378: too small.
        #expect(scaled.image.height >= 512 && scaled.image.width >= 640)
        #expect(scaled.image.width < 1008 || scaled.image.width == 756 || scaled.image.width == 1008)
        #expect(scaled.image.width <= 1008)
        let full = try ImageDecoder(minimumLongSide: 0, minimumShortSide: 0).decode(jpeg)
        #expect(full.image.width == 2016)
    }

    @Test func png() throws {
        let png = try PNGEncoder.encode(Fixtures.quadrants())
        #expect(MediaType.sniff(png) == .png)
        let decoded = try decoder.decode(png)
        assertQuadrants(decoded.image, tolerance: 0)
    }

    @Test("GIF, WebP, BMP and TIFF through ffmpeg", arguments: ["gif", "webp", "bmp", "tiff"])
    func ffmpegFormats(format: String) throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("q.png"), target = dir.appendingPathComponent("q.\(format)")
        try Fixtures.write(try PNGEncoder.encode(Fixtures.quadrants()), to: source)
        var codec: [String] = []
        if format == "webp" { codec = ["-c:v", "libwebp", "-lossless", "1"] }
        try Fixtures.ffmpeg(["-i", source.path] + codec + ["-frames:v", "1", target.path])
        let file = try MediaFile(path: target.path)
        #expect(file.type.rawValue == format)
        let decoded = try decoder.decode(file)
        #expect(decoded.image.width == 64 && decoded.image.height == 48)
        assertQuadrants(decoded.image, tolerance: format == "gif" ? 40 : 8)
    }

    @Test("an animated GIF gives its first frame")
    func animatedGIFFirstFrame() throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let gif = dir.appendingPathComponent("a.gif")
        try Fixtures.ffmpeg(["-f", "lavfi", "-i", "color=c=red:s=32x32:d=0.2,format=rgb24", "-f", "lavfi", "-i", "color=c=blue:s=32x32:d=0.2",
                             "-filter_complex", "[0][1]concat=n=2:v=1", "-r", "10", gif.path])
        let decoded = try decoder.decode(try MediaFile(path: gif.path))
        #expect(Fixtures.close(Fixtures.pixel(decoded.image, 16, 16), (255, 0, 0)))
    }

    @Test("the type comes from the bytes, not the name")
    func typeFromBytes() throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let lying = dir.appendingPathComponent("holiday.jpg")
        try Fixtures.write(try PNGEncoder.encode(Fixtures.quadrants()), to: lying)
        let file = try MediaFile(path: lying.path)
        #expect(file.type == .png)
        assertQuadrants(try decoder.decode(file).image, tolerance: 0)
        let text = dir.appendingPathComponent("notes.png")
        try Data("just some text\n".utf8).write(to: text)
        #expect(try MediaFile(path: text.path).type == .other)
    }

    @Test func sniffing() {
        #expect(MediaType.sniff([0, 0, 0, 0x18] + Array("ftypisom".utf8) + [UInt8](repeating: 0, count: 8)) == .mp4)
        #expect(MediaType.sniff([0x1A, 0x45, 0xDF, 0xA3, 0, 0]) == .matroska)
        #expect(MediaType.sniff(Array("RIFF".utf8) + [0, 0, 0, 0] + Array("AVI LIST".utf8)) == .avi)
        #expect(MediaType.sniff(Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBPVP8 ".utf8)) == .webp)
        #expect(MediaType.sniff([]) == .other)
    }

    @Test("the format registry: every picture type has one entry whose sniff rule claims its signature; doctor's list comes from it")
    func registry() {
        let pictures = MediaType.allCases.filter { $0.kind == .image }
        #expect(Set(PictureFormats.all.map(\.type)) == Set(pictures))
        #expect(PictureFormats.all.count == pictures.count, "one entry per type")
        let names = DecoderInventory.check().map(\.name)
        for type in pictures { #expect(names.contains(type.rawValue), "doctor lists \(type)") }
        #expect(MediaType.sniff(Array("RIFF\0\0\0\0AVI LIST".utf8)) == .avi, "a video's RIFF is not taken for WebP")
    }
}
