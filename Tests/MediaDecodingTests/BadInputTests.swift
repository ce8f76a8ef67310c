import Foundation
import Testing
@testable import MediaDecoding

/// Each class of bad input gives a clear error naming the file, never a crash or a hang.
@Suite("Bad input")
struct BadInputTests {
    let decoder = ImageDecoder(minimumLongSide: 0, minimumShortSide: 0)

    func expectError(_ code: MediaError.Code, _ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("expected \(code), got success", sourceLocation: sourceLocation)
        } catch let error as MediaError {
            #expect(error.code == code, "expected \(code), got \(error.code): \(error)", sourceLocation: sourceLocation)
            #expect(!error.description.isEmpty)
        } catch {
            Issue.record("expected MediaError \(code), got \(error)", sourceLocation: sourceLocation)
        }
    }

    /// The same picture in every format, written by our encoders and ffmpeg's.
    func sample(_ format: String, in dir: URL) throws -> [UInt8] {
        let picture = RGBImage(width: 200, height: 150, filledWith: (90, 140, 200))
        switch format {
        case "jpeg": return try JPEGCodec.encode(Fixtures.quadrants(width: 200, height: 150), quality: 90)
        case "png": return try PNGEncoder.encode(Fixtures.quadrants(width: 200, height: 150))
        default:
            let source = dir.appendingPathComponent("s.png"), target = dir.appendingPathComponent("s.\(format)")
            try Fixtures.write(try PNGEncoder.encode(picture), to: source)
            try Fixtures.ffmpeg(["-i", source.path] + (format == "webp" ? ["-c:v", "libwebp"] : []) + ["-frames:v", "1", target.path])
            return try Fixtures.read(target)
        }
    }

    @Test("truncated files: a JPEG or PNG gives the part that arrived, marked partial; the other formats are refused",
          arguments: ["jpeg", "png", "gif", "webp", "bmp", "tiff"])
    func truncated(format: String) throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let whole = try sample(format, in: dir)
        let cut = Array(whole[0..<(whole.count / 2)])
        do {
            let decoded = try decoder.decode(cut)
            #expect(["jpeg", "png"].contains(format), "a \(format) cut in half decoded without error")
            #expect(decoded.partialReason != nil, "\(format)")
            // The top half arrived: its red quadrant is there.
            #expect(Fixtures.close(Fixtures.pixel(decoded.image, 2, 2), (255, 0, 0)), "\(format): \(Fixtures.pixel(decoded.image, 2, 2))")
        } catch {
            #expect(!["jpeg", "png"].contains(format), "\(format): \(error)")
            #expect([.truncated, .corrupt].contains(error.code), "\(format): \(error)")
        }
    }

    @Test("garbage after a valid header is refused", arguments: ["jpeg", "png", "gif", "webp", "bmp", "tiff"])
    func corrupt(format: String) throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var bytes = try sample(format, in: dir)
        var rng = SeededGenerator(seed: 0x5155_4152)  // the same garbage on every run
        let keep = format == "jpeg" ? 200 : 40
        for i in keep..<bytes.count { bytes[i] = UInt8.random(in: 0...255, using: &rng) }
        do {
            let decoded = try decoder.decode(bytes)
            // BMP and TIFF store raw pixels and VP8 (lossy WebP) has no checksum: noise there is
            // a valid, noisy picture. PNG (CRC, zlib), GIF (block structure) and JPEG must refuse.
            #expect(["bmp", "tiff", "webp"].contains(format), "\(format) noise decoded to \(decoded.image.width)x\(decoded.image.height)")
        } catch {
            #expect([.truncated, .corrupt, .unsupportedFormat].contains(error.code), "\(format): \(error)")
        }
    }

    @Test("absurd dimensions are refused from the header alone", arguments: ["jpeg", "png", "gif", "webp", "bmp", "tiff"])
    func hugeDimensions(format: String) throws {
        let bytes: [UInt8]
        switch format {
        case "png":
            // Signature and an IHDR declaring 60000x60000; no pixel data at all.
            bytes = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
                + [0, 0, 0xEA, 0x60, 0, 0, 0xEA, 0x60, 8, 2, 0, 0, 0, 0, 0, 0, 0]
        case "jpeg":
            var jpeg = try JPEGCodec.encode(RGBImage(width: 16, height: 16, filledWith: (1, 2, 3)), quality: 50)
            let sof = try #require((0..<(jpeg.count - 8)).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 })
            jpeg[sof + 5] = 0xEA; jpeg[sof + 6] = 0x60; jpeg[sof + 7] = 0xEA; jpeg[sof + 8] = 0x60
            bytes = jpeg
        case "gif":
            bytes = Array("GIF89a".utf8) + [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0] + [0x3B]
        case "webp":
            bytes = Array("RIFF".utf8) + [30, 0, 0, 0] + Array("WEBPVP8X".utf8) + [10, 0, 0, 0, 0, 0, 0, 0]
                + [0x5F, 0xEA, 0x00, 0x5F, 0xEA, 0x00] + [UInt8](repeating: 0, count: 8)
        case "bmp":
            bytes = Array("BM".utf8) + [UInt8](repeating: 0, count: 12) + [40, 0, 0, 0, 0x60, 0xEA, 0, 0, 0x60, 0xEA, 0, 0, 1, 0, 24, 0]
                + [UInt8](repeating: 0, count: 24)
        default: // TIFF, little-endian, one IFD with width and height 60000 (LONG)
            bytes = [0x49, 0x49, 0x2A, 0, 8, 0, 0, 0, 2, 0,
                     0, 1, 4, 0, 1, 0, 0, 0, 0x60, 0xEA, 0, 0,
                     1, 1, 4, 0, 1, 0, 0, 0, 0x60, 0xEA, 0, 0, 0, 0, 0, 0]
        }
        expectError(.dimensionsTooLarge) { _ = try decoder.decode(bytes) }
    }

    @Test("limits are configurable and checked before decoding")
    func configurableLimits() throws {
        let png = try PNGEncoder.encode(RGBImage(width: 300, height: 200, filledWith: (0, 0, 0)))
        let strict = ImageDecoder(limits: MediaLimits(maxDimension: 299), minimumLongSide: 0, minimumShortSide: 0)
        expectError(.dimensionsTooLarge) { _ = try strict.decode(png) }
        let few = ImageDecoder(limits: MediaLimits(maxPixels: 50_000), minimumLongSide: 0, minimumShortSide: 0)
        expectError(.dimensionsTooLarge) { _ = try few.decode(png) }
        let small = ImageDecoder(limits: MediaLimits(maxImageFileBytes: 100), minimumLongSide: 0, minimumShortSide: 0)
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("p.png")
        try Fixtures.write(png, to: url)
        expectError(.fileTooLarge) { _ = try small.decode(try MediaFile(path: url.path)) }
    }

    @Test func emptyFile() throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("empty.jpg")
        try Data().write(to: url)
        let file = try MediaFile(path: url.path)
        #expect(file.type == .other)
        expectError(.empty) { _ = try file.readAll(limit: 1 << 20) }
    }

    @Test("symbolic links are never followed")
    func symlink() throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let target = dir.appendingPathComponent("real.png"), link = dir.appendingPathComponent("link.png")
        try Fixtures.write(try PNGEncoder.encode(Fixtures.quadrants()), to: target)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        expectError(.symbolicLink) { _ = try MediaFile(path: link.path) }
    }

    @Test("a FIFO or a folder is refused without blocking")
    func notRegular() throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fifo = dir.appendingPathComponent("pipe.jpg")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        expectError(.notRegularFile) { _ = try MediaFile(path: fifo.path) }
        expectError(.notRegularFile) { _ = try MediaFile(path: dir.path) }
    }

    @Test("a file that vanished is reported as such")
    func vanished() throws {
        expectError(.notFound) { _ = try MediaFile(path: "/nonexistent/quarantine/\(UUID().uuidString).jpg") }
    }

    @Test("a file that changes while it is read is refused")
    func changedMidAnalysis() throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("growing.png")
        try Fixtures.write(try PNGEncoder.encode(Fixtures.quadrants()), to: url)
        let file = try MediaFile(path: url.path)
        let handle = try FileHandle(forWritingTo: url)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0, 1, 2, 3]))
        try handle.close()
        expectError(.changedDuringRead) { _ = try file.readAll(limit: 1 << 20) }
    }

    @Test("a file that is not a picture is refused by the picture decoder")
    func unsupported() throws {
        expectError(.unsupportedFormat) { _ = try decoder.decode(Array("hello, world, this is text".utf8)) }
    }

    @Test("errors name the file")
    func errorsCarryPath() throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("half.jpg")
        let jpeg = try JPEGCodec.encode(Fixtures.quadrants(width: 300, height: 300), quality: 90)
        try Fixtures.write(Array(jpeg[0..<100]), to: url) // cut inside its header
        do {
            _ = try decoder.decode(try MediaFile(path: url.path))
            Issue.record("a JPEG cut inside its header decoded")
        } catch {
            #expect([.truncated, .corrupt].contains(error.code))
            #expect(error.description.hasPrefix(url.path))
        }
    }
}

/// splitmix64: deterministic bytes for tests.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
