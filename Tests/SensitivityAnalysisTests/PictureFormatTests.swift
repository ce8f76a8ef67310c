import Foundation
import MediaDecoding
import Testing
import TestSupport
@testable import SensitivityAnalysis

/// Pictures decided by their content, in the formats people receive (issue 12): files made at
/// run time with the formats' own encoders, never committed.
@Suite("Picture formats", .ownThread)
struct PictureFormatTests {
    static func heifEncode(_ inputs: [URL], to output: URL, lossless: Bool = false) throws {
        try FixtureCache.run("/usr/bin/heif-enc", (lossless ? ["-L", "-p", "chroma=444"] : ["-q", "80"]) + inputs.map(\.path) + ["-o", output.path], output: output.path)
    }

    @Test("HEIC and AVIF stills are pictures (sniffed by their ftyp brands, never the video path); the card is flagged in both, also as avifenc writes it")
    func heifAndAVIF() throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let card = dir.appendingPathComponent("card.png")
        try Data(try PNGEncoder.encode(TestCard.render(width: 800, height: 600))).write(to: card)
        let analyzer = try TestEnvironment.sharedAnalyzer()
        for (name, type) in [("card.heic", MediaType.heif), ("card.avif", .avif)] {
            let file = dir.appendingPathComponent(name)
            try Self.heifEncode([card], to: file)
            let report = analyzer.reportSynchronously(forFileAt: file.path)
            #expect(report.type == type && report.kind == .image, "\(name): \(report.type)")
            #expect(report.isSensitive, "\(name): \(String(describing: report.failure))")
        }
        let avifenc = dir.appendingPathComponent("avifenc.avif")
        try FixtureCache.run("/usr/bin/avifenc", [card.path, avifenc.path], output: avifenc.path)
        let report = analyzer.reportSynchronously(forFileAt: avifenc.path)
        #expect(report.type == .avif && report.isSensitive, "\(String(describing: report.failure))")
    }

    @Test("a HEIC as a phone writes it (512-px HEVC tile grid, scripts/heic-grid.py) with clap, irot and imir: the card shows only with the transforms applied, and is flagged")
    func heicGridWithTransforms() throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let analyzer = try TestEnvironment.sharedAnalyzer()
        let card = dir.appendingPathComponent("card.png"), stored = dir.appendingPathComponent("stored.png")
        try Data(try PNGEncoder.encode(TestCard.render(width: 1200, height: 900))).write(to: card)
        // Stored as a viewer must undo it: mirrored, turned clockwise, with a grey border to crop.
        try FFmpegTool.run(["-i", card.path, "-vf", "hflip,transpose=1,pad=iw+64:ih+64:32:32:color=gray", stored.path])
        let script = TestEnvironment.repositoryRoot.appendingPathComponent("scripts/heic-grid.py").path
        let transformed = dir.appendingPathComponent("transformed.heic"), plain = dir.appendingPathComponent("plain.heic")
        try FixtureCache.run("/usr/bin/python3", [script, stored.path, transformed.path, "--rotate", "90", "--mirror", "1", "--crop", "900", "1200"], output: transformed.path)
        try FixtureCache.run("/usr/bin/python3", [script, stored.path, plain.path], output: plain.path)
        let report = analyzer.reportSynchronously(forFileAt: transformed.path)
        #expect(report.type == .heif && report.isSensitive, "\(String(describing: report.failure))")
        #expect(report.analysis?.width == 1200 && report.analysis?.height == 900, "cropped, then turned: \(String(describing: report.analysis?.width))x\(String(describing: report.analysis?.height))")
        let untransformed = analyzer.reportSynchronously(forFileAt: plain.path)
        #expect(untransformed.failure == nil && !untransformed.isSensitive, "the stored tiles alone are not the card")
        #expect(untransformed.analysis?.width == 964 && untransformed.analysis?.height == 1264, "the grid's own size, not its tiles'")
    }

    @Test("a HEIF collection: the card as its second image is found; a benign photo encoded losslessly scores as its PNG does")
    func heifCollectionAndParity() throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let analyzer = try TestEnvironment.sharedAnalyzer()
        let benign = TestEnvironment.photos.appendingPathComponent("astronaut.png")
        let card = dir.appendingPathComponent("card.png")
        try Data(try PNGEncoder.encode(TestCard.render(width: 640, height: 480))).write(to: card)
        let both = dir.appendingPathComponent("both.heic")
        try Self.heifEncode([benign, card], to: both)
        let report = analyzer.reportSynchronously(forFileAt: both.path)
        #expect(report.isSensitive && report.analysis?.reasons.first?.contains("image 2 of 2") == true, "\(String(describing: report.analysis?.reasons))")

        let lossless = dir.appendingPathComponent("astronaut.heic")
        try Self.heifEncode([benign], to: lossless, lossless: true)
        try Self.expectSameScores(analyzer.reportSynchronously(forFileAt: lossless.path), as: analyzer.reportSynchronously(forFileAt: benign.path), "lossless HEIC")
    }

    /// Expects `other` to score as `reference` (the same picture in another format) within the
    /// golden tolerances of the upstream parity tests.
    static func expectSameScores(_ other: FileReport, as reference: FileReport, _ name: String) throws {
        let a = try #require(other.analysis, "\(name): \(String(describing: other.failure))"), b = try #require(reference.analysis)
        #expect(!a.isSensitive && !b.isSensitive, "\(name)")
        #expect(abs((a.nsfwScore ?? 0) - (b.nsfwScore ?? 0)) <= GoldenParityTests.nsfwTolerance, "\(name): open_nsfw \(String(describing: a.nsfwScore)) vs \(String(describing: b.nsfwScore))")
        for detection in b.detections where detection.score >= 0.3 {
            let match = a.detections.filter { $0.label == detection.label }.map(\.score).max() ?? 0
            #expect(abs(match - detection.score) <= GoldenParityTests.scoreTolerance, "\(name): \(detection.label) \(match) vs \(detection.score)")
        }
    }

    @Test("JPEG XL through libjxl: the card is flagged; lossless scores as the PNG; an animation's second frame; a file cut short is judged on what decodes (partial)")
    func jpegXL() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let analyzer = try TestEnvironment.sharedAnalyzer()
        let benign = TestEnvironment.photos.appendingPathComponent("astronaut.png")
        let card = dir.appendingPathComponent("card.png"), frame1 = dir.appendingPathComponent("frame1.png"), frame2 = dir.appendingPathComponent("frame2.png")
        try Data(try PNGEncoder.encode(TestCard.render(width: 800, height: 600))).write(to: card)
        let cardJXL = dir.appendingPathComponent("card.jxl"), benignJXL = dir.appendingPathComponent("astronaut.jxl")
        try FixtureCache.run("/usr/bin/cjxl", [card.path, cardJXL.path, "-q", "85"], output: cardJXL.path)
        try FixtureCache.run("/usr/bin/cjxl", [benign.path, benignJXL.path, "-d", "0"], output: benignJXL.path)
        let flagged = await analyzer.report(forFileAt: cardJXL.path)
        #expect(flagged.type == .jxl && flagged.isSensitive, "\(String(describing: flagged.failure))")
        try Self.expectSameScores(await analyzer.report(forFileAt: benignJXL.path), as: await analyzer.report(forFileAt: benign.path), "lossless JPEG XL")

        let photo = try ImageDecoder(minimumLongSide: 0, minimumShortSide: 0).decode(Array(try Data(contentsOf: benign)))
        try Data(try PNGEncoder.encode(photo.image.resizedBilinear(width: 640, height: 480))).write(to: frame1)
        try Data(try PNGEncoder.encode(TestCard.render(width: 640, height: 480))).write(to: frame2)
        let gif = dir.appendingPathComponent("anim.gif"), animation = dir.appendingPathComponent("anim.jxl")
        try FFmpegTool.run(["-framerate", "2", "-i", dir.appendingPathComponent("frame%d.png").path, "-f", "gif", gif.path])
        try FixtureCache.run("/usr/bin/cjxl", [gif.path, animation.path, "-d", "1"], output: animation.path)
        let animated = await analyzer.report(forFileAt: animation.path)
        #expect(animated.isSensitive && animated.analysis?.reasons.first?.contains("image 2 of 2") == true, "\(String(describing: animated.analysis?.reasons)) \(String(describing: animated.failure))")
        let firstFrame = dir.appendingPathComponent("first.jxl")
        try FixtureCache.run("/usr/bin/cjxl", [frame1.path, firstFrame.path, "-d", "1"], output: firstFrame.path)
        #expect(!(await analyzer.report(forFileAt: firstFrame.path)).isSensitive)

        let bytes = try Data(contentsOf: cardJXL)
        let cut = dir.appendingPathComponent("cut.jxl")
        try bytes.prefix(bytes.count * 6 / 10).write(to: cut)
        let partial = await analyzer.report(forFileAt: cut.path)
        #expect(partial.analysis?.partialReason != nil && partial.isSensitive, "\(String(describing: partial.failure))")
        try bytes.prefix(40).write(to: cut)
        #expect((await analyzer.report(forFileAt: cut.path)).failure?.code == "truncated")
    }

    /// An SVG document drawing `images` (href, x, y, width, height) on a canvas of `size`.
    static func svg(size: (Int, Int), _ images: [(href: String, frame: (Int, Int, Int, Int))]) -> Data {
        var text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"\(size.0)\" height=\"\(size.1)\">\n"
        for image in images {
            text += "  <image x=\"\(image.frame.0)\" y=\"\(image.frame.1)\" width=\"\(image.frame.2)\" height=\"\(image.frame.3)\" xlink:href=\"\(image.href)\"/>\n"
        }
        return Data((text + "</svg>\n").utf8)
    }

    @Test("SVG through librsvg: an embedded card is flagged, also when drawn 4x3 pixels in a corner; nothing outside the document is loaded; a benign photo embedded 1:1 scores as its PNG")
    func svgDocuments() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let analyzer = try TestEnvironment.sharedAnalyzer()
        let benign = TestEnvironment.photos.appendingPathComponent("astronaut.png")
        let benignURL = "data:image/png;base64," + (try Data(contentsOf: benign)).base64EncodedString()
        let cardPNG = try PNGEncoder.encode(TestCard.render(width: 640, height: 480))
        let card = dir.appendingPathComponent("card.png")
        try Data(cardPNG).write(to: card)
        let cardURL = "data:image/png;base64," + Data(cardPNG).base64EncodedString(options: .lineLength76Characters)

        let whole = dir.appendingPathComponent("whole.svg"), hidden = dir.appendingPathComponent("hidden.svg")
        let outside = dir.appendingPathComponent("outside.svg"), photo = dir.appendingPathComponent("photo.svg")
        try Self.svg(size: (640, 480), [(cardURL, (0, 0, 640, 480))]).write(to: whole)
        try Self.svg(size: (512, 512), [(benignURL, (0, 0, 512, 512)), (cardURL, (508, 509, 4, 3))]).write(to: hidden)
        // The card by file path, relative path and URL: a document must not reach outside itself.
        try Self.svg(size: (640, 480), [(card.absoluteString, (0, 0, 640, 480)), ("card.png", (0, 0, 640, 480)), ("http://127.0.0.1:9/card.png", (0, 0, 640, 480))]).write(to: outside)
        try Self.svg(size: (512, 512), [(benignURL, (0, 0, 512, 512))]).write(to: photo)

        let report = await analyzer.report(forFileAt: whole.path)
        #expect(report.type == .svg && report.isSensitive, "\(String(describing: report.failure))")
        let tiny = await analyzer.report(forFileAt: hidden.path)
        #expect(tiny.isSensitive && tiny.analysis?.reasons.first?.contains("image 3 of 3") == true, "\(String(describing: tiny.analysis?.reasons))")
        let external = await analyzer.report(forFileAt: outside.path)
        #expect(external.failure == nil && !external.isSensitive)
        let drawn = try ImageDecoder().decode(Array(try Data(contentsOf: outside)), type: .svg)
        #expect(drawn.image.pixels.allSatisfy { $0 == 255 }, "nothing drawn: the referenced files were not loaded")
        try Self.expectSameScores(await analyzer.report(forFileAt: photo.path), as: await analyzer.report(forFileAt: benign.path), "SVG embedding the photo")

        let broken = dir.appendingPathComponent("broken.svg")
        try Data("<svg xmlns=\"http://www.w3.org/2000/svg\"><rect".utf8).write(to: broken)
        let damaged = await analyzer.report(forFileAt: broken.path)
        #expect(damaged.failure?.code == "corrupt" && damaged.failure?.message.contains("SVG") == true, "\(String(describing: damaged.failure))")
    }

    @Test("a recognised picture this build cannot decode (JPEG XR) is unsupported_format naming the format, never 'other'")
    func recognisedButUndecodable() throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let analyzer = try TestEnvironment.sharedAnalyzer()
        let jxr = dir.appendingPathComponent("picture.bin")
        try Data([0x49, 0x49, 0xBC, 0x01, 0x08, 0x00, 0x00, 0x00, 0x01, 0x00]).write(to: jxr)
        let report = analyzer.reportSynchronously(forFileAt: jxr.path)
        #expect(report.kind == .image)
        #expect(report.failure?.code == "unsupported_format" && report.failure?.message.contains("JPEG XR") == true, "\(String(describing: report.failure))")
        #expect(MediaType.sniff(Array("<html><body>not svg</body></html>".utf8)) == .other)
    }

    @Test("ftyp brands: HEIF and AVIF stills are pictures, image sequences and MP4 stay videos")
    func brands() {
        func ftyp(_ major: String, _ compatible: [String]) -> [UInt8] {
            let body = Array(major.utf8) + [0, 0, 0, 0] + compatible.flatMap { Array($0.utf8) }
            let size = 8 + body.count
            return [0, 0, 0, UInt8(size)] + Array("ftyp".utf8) + body + [0, 0, 0, 8] + Array("free".utf8)
        }
        #expect(MediaType.sniff(ftyp("heic", ["mif1", "heic"])) == .heif)
        #expect(MediaType.sniff(ftyp("mif1", ["mif1", "heic"])) == .heif)
        #expect(MediaType.sniff(ftyp("avif", ["avif", "mif1", "miaf"])) == .avif)
        #expect(MediaType.sniff(ftyp("msf1", ["msf1", "hevc"])) == .mp4)
        #expect(MediaType.sniff(ftyp("avis", ["avis", "avif", "msf1"])) == .mp4)
        #expect(MediaType.sniff(ftyp("isom", ["isom", "iso2", "avc1", "mp41"])) == .mp4)
    }

    @Test("multi-page TIFF: every page is judged (the card on page 2 is found); a page decodes as ffmpeg decodes it")
    func multiPageTIFF() throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let analyzer = try TestEnvironment.sharedAnalyzer()
        let benignPNG = TestEnvironment.photos.appendingPathComponent("astronaut.png")
        let card = dir.appendingPathComponent("card.png")
        try Data(try PNGEncoder.encode(TestCard.render(width: 640, height: 480))).write(to: card)
        let first = dir.appendingPathComponent("first.tif"), second = dir.appendingPathComponent("second.tif"), both = dir.appendingPathComponent("both.tif")
        try FFmpegTool.run(["-i", benignPNG.path, first.path])
        try FFmpegTool.run(["-i", card.path, second.path])
        try FixtureCache.run("/usr/bin/tiffcp", [first.path, second.path, both.path], output: both.path)
        let report = analyzer.reportSynchronously(forFileAt: both.path)
        #expect(report.isSensitive && report.analysis?.reasons.first?.contains("image 2 of 2") == true, "\(String(describing: report.analysis?.reasons)) \(String(describing: report.failure))")
        #expect(!analyzer.reportSynchronously(forFileAt: first.path).isSensitive)

        let bytes = Array(try Data(contentsOf: first))
        let request = DecodeRequest(minimumLongSide: 640, minimumShortSide: 512, limits: .default)
        let libtiff = try ImageDecoder(minimumLongSide: 640, minimumShortSide: 512).decode(bytes)
        let ffmpeg = try ImageDecoder.ffmpegTIFF(bytes, request: request)
        #expect(libtiff.image.width == ffmpeg.image.width && libtiff.image.height == ffmpeg.image.height)
        var total = 0
        for i in 0..<min(libtiff.image.pixels.count, ffmpeg.image.pixels.count) { total += abs(Int(libtiff.image.pixels[i]) - Int(ffmpeg.image.pixels[i])) }
        #expect(Double(total) / Double(libtiff.image.pixels.count) < 2, "mean difference against ffmpeg's TIFF decoder")
    }

    /// A JPEG with an EXIF block whose IFD1 carries `thumbnail` (built by hand, little-endian).
    static func withEXIFThumbnail(_ jpeg: [UInt8], thumbnail: [UInt8]) -> [UInt8] {
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
        func le32(_ v: Int) -> [UInt8] { le16(v & 0xFFFF) + le16(v >> 16) }
        // TIFF header (8), IFD0 with no entry (2 + 4), IFD1 with two entries (2 + 24 + 4), thumbnail.
        let ifd1 = 8 + 6, data = ifd1 + 2 + 24 + 4
        var tiff: [UInt8] = [0x49, 0x49, 0x2A, 0x00] + le32(8) + le16(0) + le32(ifd1)
        tiff += le16(2) + le16(0x0201) + le16(4) + le32(1) + le32(data) + le16(0x0202) + le16(4) + le32(1) + le32(thumbnail.count) + le32(0)
        tiff += thumbnail
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let app1: [UInt8] = [0xFF, 0xE1] + [UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
        return Array(jpeg.prefix(2)) + app1 + Array(jpeg.dropFirst(2))
    }

    @Test("a clean JPEG whose EXIF thumbnail is the card is flagged; without the thumbnail it is not")
    func exifThumbnail() throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let analyzer = try TestEnvironment.sharedAnalyzer()
        let photo = Array(try Data(contentsOf: TestEnvironment.photos.appendingPathComponent("astronaut__q50.jpg")))
        let thumbnail = try JPEGCodec.encode(TestCard.render(width: 160, height: 120), quality: 75)
        let with = dir.appendingPathComponent("with.jpg"), without = dir.appendingPathComponent("without.jpg")
        try Data(Self.withEXIFThumbnail(photo, thumbnail: thumbnail)).write(to: with)
        try Data(photo).write(to: without)
        let report = analyzer.reportSynchronously(forFileAt: with.path)
        #expect(report.isSensitive && report.analysis?.reasons.first?.contains("image 2 of 2") == true, "\(String(describing: report.analysis?.reasons))")
        #expect(report.analysis?.width == 160, "the size (and boxes) of the image that was flagged")
        #expect(!analyzer.reportSynchronously(forFileAt: without.path).isSensitive)
    }

    @Test("animations whose second frame is the card: an APNG and an AVIF image sequence (sampled as a video is, ten times a second) and an animated WebP (every frame, composed by libwebp)")
    func animations() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let analyzer = try TestEnvironment.sharedAnalyzer()
        let benign = dir.appendingPathComponent("frame1.png"), card = dir.appendingPathComponent("frame2.png")
        // Scaled by ffmpeg, which keeps astronaut.png's 2.6 KB ICC profile: the APNG's acTL chunk
        // then comes after the first 2 KiB, where ffmpeg's probe would take it for a still PNG.
        try FFmpegTool.run(["-i", TestEnvironment.photos.appendingPathComponent("astronaut.png").path, "-vf", "scale=640:480", benign.path])
        try Data(try PNGEncoder.encode(TestCard.render(width: 640, height: 480))).write(to: card)
        let apng = dir.appendingPathComponent("anim.png"), webp = dir.appendingPathComponent("anim.webp"), still = dir.appendingPathComponent("still.webp")
        try FFmpegTool.run(["-framerate", "2", "-i", dir.appendingPathComponent("frame%d.png").path, "-plays", "0", "-f", "apng", apng.path])
        try FixtureCache.run("/usr/bin/img2webp", ["-loop", "0", "-d", "500", "-lossy", benign.path, card.path, "-o", webp.path], output: webp.path)
        try FixtureCache.run("/usr/bin/img2webp", ["-lossy", benign.path, "-o", still.path], output: still.path)
        let head = Array(try Data(contentsOf: apng).prefix(4096))
        let acTL = try #require((0..<(head.count - 4)).first { head[$0..<($0 + 4)].elementsEqual(Array("acTL".utf8)) })
        #expect(acTL > 2048, "the animation control chunk is past ffmpeg's first probe")
        let animatedPNG = await analyzer.report(forFileAt: apng.path)
        #expect(animatedPNG.isSensitive && animatedPNG.analysis?.frameTime == 0.5, "\(String(describing: animatedPNG.analysis?.frameTime)) \(String(describing: animatedPNG.failure))")
        let animatedWebP = await analyzer.report(forFileAt: webp.path)
        #expect(animatedWebP.isSensitive && animatedWebP.analysis?.reasons.first?.contains("image 2 of 2") == true,
                "\(String(describing: animatedWebP.analysis?.reasons)) \(String(describing: animatedWebP.failure))")
        // An AVIF image sequence (ftyp avis) takes the video path, sampled as an animation.
        let sequence = dir.appendingPathComponent("anim.avif")
        try FixtureCache.run("/usr/bin/avifenc", ["--fps", "2", benign.path, card.path, sequence.path], output: sequence.path)
        let avis = await analyzer.report(forFileAt: sequence.path)
        #expect(avis.kind == .video && avis.isSensitive && avis.analysis?.frameTime == 0.5, "\(String(describing: avis.analysis?.frameTime)) \(String(describing: avis.failure))")
        let first = await analyzer.report(forFileAt: still.path)
        #expect(first.failure == nil && !first.isSensitive)
        #expect(!(await analyzer.report(forFileAt: benign.path)).isSensitive)
    }
}
