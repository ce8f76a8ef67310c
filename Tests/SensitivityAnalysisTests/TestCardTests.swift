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

    @Test("never recognised in the natural photos, filling them or inside them")
    func neverInNaturalPhotos() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: TestEnvironment.photos.path).sorted()
        #expect(names.count >= 40, "run 'make testdata'")
        Self.expectNeverInside(names.map { TestEnvironment.photos.appendingPathComponent($0).path }, "photos")
    }

    /// The benchmark pictures (60 JPEGs 4000x3000 and 6 PNGs made from the photos by crops,
    /// mirroring and enlarging), in four parts that run side by side.
    static let benchPictures: [String] = {
        let bench = TestEnvironment.repositoryRoot.appendingPathComponent("testdata/bench")
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: bench.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        return names.map { bench.appendingPathComponent($0).path }
    }()

    @Test("never recognised in the benchmark pictures (testdata/bench, when 'make bench-photos' has run)", arguments: 0..<4)
    func neverInBenchPictures(part: Int) throws {
        if Self.benchPictures.isEmpty {
            if part == 0 { print("TestCardTests: no testdata/bench ('make bench-photos' makes it): the benchmark pictures are not checked") }
            return
        }
        Self.expectNeverInside(Self.benchPictures.enumerated().filter { $0.offset % 4 == part }.map(\.element), "benchmark pictures, part \(part + 1) of 4")
    }

    /// Expects no card in any of the pictures at `paths`, decoded as the analyzer decodes them:
    /// neither filling them (photos do not even separate the cells: the margin to the threshold
    /// is wide) nor inside them (where the strongest rectangle stays under half the threshold).
    static func expectNeverInside(_ paths: [String], _ what: String) {
        var strongest = (whole: -Double.infinity, inside: -Double.infinity, name: "")
        for path in paths {
            guard let image = try? analysisDecoder.decode(try MediaFile(path: path)).image else {
                Issue.record("\(path): cannot decode")
                continue
            }
            let whole = TestCard.separation(image), match = TestCard.bestMatch(image)
            strongest.whole = max(strongest.whole, whole)
            if match.separation > strongest.inside { strongest = (strongest.whole, match.separation, (path as NSString).lastPathComponent) }
            #expect(match.separation < TestCard.threshold, "\(path) taken for the test card at \(match.frame)")
        }
        print("TestCardTests: \(what): strongest separation in \(paths.count) pictures \(strongest.inside) (\(strongest.name)), of the whole picture \(strongest.whole); threshold \(TestCard.threshold)")
        #expect(strongest.whole < 0, "\(what): strongest separation of a whole picture \(strongest.whole)")
        #expect(strongest.inside < TestCard.threshold / 2, "\(what): strongest separation \(strongest.inside) in \(strongest.name)")
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

    // MARK: - The card covering a part of the picture

    /// The analyzer's decoder: pictures at analysis size.
    static let analysisDecoder = ImageDecoder(minimumLongSide: SensitivityAnalyzer.shrinkFloorFactor * 320,
                                              minimumShortSide: SensitivityAnalyzer.shrinkFloorFactor * 256)

    /// Backgrounds for the card: a real photo at analysis size (if 'make testdata' has run) and a
    /// photo-like gradient with noise (always).
    static let backgrounds: [(name: String, image: RGBImage)] = {
        var backgrounds: [(String, RGBImage)] = []
        let chelsea = TestEnvironment.photos.appendingPathComponent("chelsea.png").path
        if let file = try? MediaFile(path: chelsea), let photo = try? analysisDecoder.decode(file).image {
            // Enlarged to the analysis size of a camera's photo (it is 451x300).
            backgrounds.append(("chelsea.png", photo.resizedPillowBilinear(width: 800, height: 800 * photo.height / photo.width)))
        }
        let w = 800, h = 600
        var pixels = [UInt8](repeating: 0, count: w * h * 3)
        var state: UInt32 = 12345
        for y in 0..<h {
            for x in 0..<w {
                state = state &* 1_664_525 &+ 1_013_904_223
                let noise = Int(state >> 27) - 16, p = (y * w + x) * 3
                pixels[p] = UInt8(clamping: 60 + x * 140 / w + noise)
                pixels[p + 1] = UInt8(clamping: 150 - y * 100 / h + noise)
                pixels[p + 2] = UInt8(clamping: 90 + (x + y) * 80 / (w + h) + noise)
            }
        }
        backgrounds.append(("gradient", RGBImage(width: w, height: h, pixels: pixels)))
        return backgrounds
    }()

    /// Where a card covering a part of a `w`×`h` picture is placed: (x, y, width, height).
    enum Placement: String, CaseIterable, CustomStringConvertible {
        case topLeft, topRight, bottomLeft, bottomRight, middle, strip, thinWideStrip
        var description: String { rawValue }
        func rect(_ w: Int, _ h: Int) -> (x: Int, y: Int, width: Int, height: Int) {
            switch self {
            case .topLeft: (0, 0, (w + 1) / 2, (h + 1) / 2)
            case .topRight: (w / 2, 0, (w + 1) / 2, (h + 1) / 2)
            case .bottomLeft: (0, h / 2, (w + 1) / 2, (h + 1) / 2)
            case .bottomRight: (w / 2, h / 2, (w + 1) / 2, (h + 1) / 2)
            case .middle: (w / 4, h / 4, (w + 1) / 2, (h + 1) / 2)
            case .strip: (0, h * 2 / 5, w, (h + 3) / 4) // full width, a quarter of the height
            case .thinWideStrip: (w / 10, h / 20, w * 8 / 10, h * 5 / 16) // 80 % x 31 %: just over a quarter
            }
        }
    }

    /// The ways a picture reaches the analyzer: as drawn, re-encoded as JPEG at quality 50,
    /// shrunk to half.
    static func variants(_ image: RGBImage) throws -> [(String, RGBImage)] {
        let jpeg = try analysisDecoder.decode(try JPEGCodec.encode(image, quality: 50)).image
        return [("as drawn", image), ("JPEG q50", jpeg), ("halved", image.resizedPillowBilinear(width: image.width / 2, height: image.height / 2))]
    }

    /// Expects the card found in `image`, at `rect` within a few pixels.
    static func expectFound(_ image: RGBImage, at rect: (x: Int, y: Int, width: Int, height: Int), scale: Double = 1, _ what: String) {
        let match = TestCard.bestMatch(image)
        guard let found = TestCard.locate(image) else {
            Issue.record("\(what): card not recognised (best separation \(match.separation) at \(match.frame))")
            return
        }
        let tolerance = 3 + Double(max(rect.width, rect.height)) * scale / 64
        let expected = [Double(rect.x), Double(rect.y), Double(rect.width), Double(rect.height)].map { $0 * scale }
        let got = [found.x, found.y, found.width, found.height]
        #expect(zip(expected, got).allSatisfy { abs($0 - $1) <= tolerance }, "\(what): found at \(found), drawn at \(expected)")
    }

    @Test("recognised where it covers a quarter of a photo: in each corner, the middle, as a strip; after JPEG q50 and halving",
          arguments: Placement.allCases)
    func quarterOfAPhoto(_ placement: Placement) throws {
        for background in Self.backgrounds {
            let rect = placement.rect(background.image.width, background.image.height)
            let picture = TestCard.render(width: rect.width, height: rect.height, on: background.image, x: rect.x, y: rect.y)
            for (how, image) in try Self.variants(picture) {
                Self.expectFound(image, at: rect, scale: Double(image.width) / Double(picture.width), "\(placement) on \(background.name), \(how)")
            }
        }
    }

    @Test("recognised in a screenshot: in a window with grey chrome on a coloured desktop; after JPEG q50 and halving")
    func screenshot() throws {
        let w = 1280, h = 800
        var desktop = RGBImage(width: w, height: h, filledWith: (38, 92, 150))
        func fill(_ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int, _ rgb: (UInt8, UInt8, UInt8)) {
            for y in y0..<y1 { for x in x0..<x1 { let p = (y * w + x) * 3; desktop.pixels[p] = rgb.0; desktop.pixels[p + 1] = rgb.1; desktop.pixels[p + 2] = rgb.2 } }
        }
        fill(0, h - 40, w, h, (30, 30, 30))          // a dark panel
        fill(140, 60, 1140, 740, (214, 214, 214))    // the window
        fill(140, 60, 1140, 96, (160, 160, 164))     // its title bar
        for x in stride(from: 150, to: 400, by: 60) { fill(x, 70, x + 40, 86, (245, 245, 245)) } // title bar buttons, white
        fill(146, 102, 1134, 130, (250, 250, 250))   // a toolbar
        let card = (x: 240, y: 150, width: 800, height: 560) // 44 % of the screen
        let picture = TestCard.render(width: card.width, height: card.height, on: desktop, x: card.x, y: card.y)
        for (how, image) in try Self.variants(picture) {
            Self.expectFound(image, at: card, scale: Double(image.width) / Double(w), "screenshot, \(how)")
        }
    }

    @Test("recognised in letterboxed video: black bars above and below, or at the sides")
    func letterboxed() throws {
        let wide = TestCard.render(width: 640, height: 270, on: RGBImage(width: 640, height: 480, filledWith: (0, 0, 0)), x: 0, y: 105)
        let tall = TestCard.render(width: 360, height: 480, on: RGBImage(width: 640, height: 480, filledWith: (16, 16, 16)), x: 140, y: 0)
        for (name, picture, rect) in [("bars above and below", wide, (x: 0, y: 105, width: 640, height: 270)), ("bars at the sides", tall, (x: 140, y: 0, width: 360, height: 480))] {
            for (how, image) in try Self.variants(picture) {
                Self.expectFound(image, at: rect, scale: Double(image.width) / 640, "\(name), \(how)")
            }
        }
    }

    @Test("a card covering a ninth of the picture is not looked for (the least is a quarter)")
    func ninthIsNot() throws {
        let background = Self.backgrounds.last!.image
        let picture = TestCard.render(width: background.width / 3, height: background.height / 3, on: background, x: background.width / 3, y: background.height / 3)
        #expect(!TestCard.recognises(picture))
        #expect(TestCard.gridCandidates(picture).allSatisfy { $0.width * $0.height >= Double(picture.width * picture.height) * TestCard.minimumCover * 0.9 })
    }
}
