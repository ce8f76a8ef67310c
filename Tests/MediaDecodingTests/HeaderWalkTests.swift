import Foundation
import Testing
import TestSupport
@testable import MediaDecoding

/// Headers behind metadata (issue 27): a picture's size is found by walking its format's
/// structure however far into the file it is (megabytes of XMP before a JPEG's frame header, a
/// TIFF IFD at the end, a JPEG XL codestream after large boxes), with a few small reads; hostile
/// structures are refused quickly, saying why. Every file is made in the test.
@Suite struct HeaderWalkTests {

    static let request = DecodeRequest(minimumLongSide: 320, minimumShortSide: 256, limits: .default)

    /// XMP-like text, as Adobe's extended XMP carries it (`http://ns.adobe.com/xmp/extension/`).
    static func metadataBody(_ length: Int, marker: UInt8) -> [UInt8] {
        let prefix = marker == 0xE2 ? "ICC_PROFILE\u{0}" : "http://ns.adobe.com/xmp/extension/\u{0}"
        let text = Array("<rdf:Description rdf:about='' xmlns:crs='http://ns.adobe.com/camera-raw-settings/1.0/' crs:ToneCurve='0, 0 / 255, 255'/>\n".utf8)
        var body = Array(prefix.utf8)
        body.reserveCapacity(length + text.count)
        while body.count < length { body += text }
        return Array(body.prefix(length))
    }

    /// `jpeg` with `count` full-size APP1/APP2 segments (64 KiB each) put right after SOI, in
    /// front of its own segments and its frame header.
    static func withMetadata(_ jpeg: [UInt8], segments count: Int) -> [UInt8] {
        var out: [UInt8] = [0xFF, 0xD8]
        let bodies = [metadataBody(65_533, marker: 0xE1), metadataBody(65_533, marker: 0xE2)]
        out.reserveCapacity(jpeg.count + count * 65_537)
        for i in 0..<count {
            out += [0xFF, i % 4 == 3 ? 0xE2 : 0xE1, 0xFF, 0xFF]
            out += bodies[i % 4 == 3 ? 1 : 0]
        }
        return out + jpeg[2...]
    }

    static func photo() throws -> [UInt8] {
        try JPEGCodec.encode(Fixtures.quadrants(width: 320, height: 240), quality: 90)
    }

    /// Decodes the file as analysis does and checks it is the 320x240 quadrants picture.
    static func expectQuadrants(_ url: URL, _ what: String) throws {
        let decoded = try ImageDecoder().decode(try MediaFile(path: url.path))
        #expect(decoded.originalWidth == 320 && decoded.originalHeight == 240, "\(what): \(decoded.originalWidth)x\(decoded.originalHeight)")
        let image = decoded.image
        #expect(Fixtures.close(Fixtures.pixel(image, image.width / 8, image.height / 8), (255, 0, 0)), "\(what): top left is not red")
        #expect(Fixtures.close(Fixtures.pixel(image, image.width * 7 / 8, image.height * 7 / 8), (255, 255, 255)), "\(what): bottom right is not white")
    }

    @Test("a JPEG with 6.5 MB of APP1/APP2 metadata before its frame header is judged, baseline and progressive",
          arguments: ["baseline", "progressive"])
    func jpegBehindMetadata(kind: String) throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var jpeg = try Self.photo()
        if kind == "progressive" {
            let plain = dir.appendingPathComponent("plain.jpg"), progressive = dir.appendingPathComponent("progressive.jpg")
            try Fixtures.write(jpeg, to: plain)
            try FixtureCache.run("/usr/bin/jpegtran", ["-progressive", "-outfile", progressive.path, plain.path], output: progressive.path)
            jpeg = try Fixtures.read(progressive)
        }
        let url = dir.appendingPathComponent("edited.jpg")
        let bytes = Self.withMetadata(jpeg, segments: 100)
        #expect(bytes.count > 6_500_000)
        try Fixtures.write(bytes, to: url)

        let reader = HeaderReader(file: try MediaFile(path: url.path))
        let frame = try #require(try ImageHeader.jpegFrame(reader))
        #expect(frame.width == 320 && frame.height == 240 && frame.progressive == (kind == "progressive"))
        // One read per segment head at most (64 KiB apart), never the file.
        #expect(reader.reads <= 105, "\(reader.reads) reads")
        // TurboJPEG itself decodes it (the whole file in memory, within the 256 MiB limit).
        try Self.expectQuadrants(url, kind)
    }

    @Test("a hostile JPEG of millions of empty segments is refused quickly, saying why")
    func tinySegments() throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let jpeg = try Self.photo()
        var bytes: [UInt8] = [0xFF, 0xD8]
        bytes.reserveCapacity(3_000_000 * 4 + jpeg.count)
        for _ in 0..<3_000_000 { bytes += [0xFF, 0xE0, 0x00, 0x02] }
        bytes += jpeg[2...]
        let url = dir.appendingPathComponent("many.jpg")
        try Fixtures.write(bytes, to: url)
        let started = Date()
        do {
            _ = try ImageDecoder().decode(try MediaFile(path: url.path))
            Issue.record("a JPEG of 3 million segments before its frame was decoded")
        } catch {
            #expect(error.code == .corrupt, "\(error)")
            #expect(error.description.contains("more than 65536 marker segments"), "\(error)")
        }
        #expect(Date().timeIntervalSince(started) < 1, "took \(Date().timeIntervalSince(started)) s")
    }

    @Test("a JPEG whose segment length points past the end of the file is refused as truncated")
    func segmentPastTheEnd() throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var bytes = Array(Self.withMetadata(try Self.photo(), segments: 8).prefix(2 + 8 * 65_537))
        bytes += [0xFF, 0xE1, 0xFF, 0xFF] + Array(repeating: 0x41, count: 1000)
        let url = dir.appendingPathComponent("cut.jpg")
        try Fixtures.write(bytes, to: url)
        do {
            _ = try ImageDecoder().decode(try MediaFile(path: url.path))
            Issue.record("decoded a JPEG that ends inside its metadata")
        } catch {
            #expect(error.code == .truncated, "\(error)")
            #expect(error.description.contains("past the end of the file"), "\(error)")
        }
    }

    @Test("a TIFF whose first IFD is at the end of a 5.8 MB file: its size is read there and it decodes")
    func tiffIFDAtTheEnd() throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let png = dir.appendingPathComponent("q.png"), tiff = dir.appendingPathComponent("far.tif")
        try Fixtures.write(try PNGEncoder.encode(Fixtures.quadrants(width: 1600, height: 1200)), to: png)
        try Fixtures.ffmpeg(["-i", png.path, "-c:v", "tiff", "-compression_algo", "raw", "-pix_fmt", "rgb24", tiff.path])
        let bytes = try Fixtures.read(tiff)
        let ifd = Int(bytes[4]) | Int(bytes[5]) << 8 | Int(bytes[6]) << 16 | Int(bytes[7]) << 24
        try #require(ifd > 4 << 20, "ffmpeg put the IFD at \(ifd)")
        let reader = HeaderReader(file: try MediaFile(path: tiff.path))
        let size = try #require(try ImageHeader.tiffDimensions(reader))
        #expect(size.width == 1600 && size.height == 1200)
        #expect(reader.reads <= 3)
        let decoded = try ImageDecoder().decode(try MediaFile(path: tiff.path))
        #expect(decoded.originalWidth == 1600)
    }

    @Test("an extended WebP with 3 MB of ICC profile before its bitstream decodes, and the bitstream's own size counts")
    func webpBehindICC() throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let png = dir.appendingPathComponent("q.png"), simple = dir.appendingPathComponent("simple.webp")
        try Fixtures.write(try PNGEncoder.encode(Fixtures.quadrants(width: 320, height: 240)), to: png)
        try FixtureCache.run("/usr/bin/cwebp", ["-quiet", "-q", "90", png.path, "-o", simple.path], output: simple.path)
        let vp8 = Array(try Fixtures.read(simple)[12...]) // the VP8 chunk, whole
        func le(_ v: Int, _ n: Int) -> [UInt8] { (0..<n).map { UInt8((v >> (8 * $0)) & 0xFF) } }
        func extended(canvas: (Int, Int)) -> [UInt8] {
            let icc = Self.metadataBody(3_000_000, marker: 0xE2)
            var body = Array("WEBP".utf8) + Array("VP8X".utf8) + le(10, 4) + [0x20, 0, 0, 0] + le(canvas.0 - 1, 3) + le(canvas.1 - 1, 3)
            body += Array("ICCP".utf8) + le(icc.count, 4) + icc
            body += vp8
            return Array("RIFF".utf8) + le(body.count, 4) + body
        }
        let url = dir.appendingPathComponent("icc.webp")
        try Fixtures.write(extended(canvas: (320, 240)), to: url)
        try Self.expectQuadrants(url, "webp")
        // A canvas declared smaller than the bitstream: the bitstream's size is what is allocated.
        let lying = HeaderReader(bytes: extended(canvas: (32, 24)))
        let size = try #require(try ImageHeader.dimensions(lying, type: .webp))
        #expect(size.width == 320 && size.height == 240)
    }

    /// A minimal ISO BMFF box.
    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        let size = payload.count + 8
        return [UInt8(size >> 24 & 0xFF), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + Array(type.utf8) + payload
    }

    static func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    @Test("a HEIF whose meta box comes after 3 MB: its ispe is found, and a huge one refused before decoding")
    func heifMetaFarIn() throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func file(width: Int, height: Int) throws -> URL {
            let ispe = Self.box("ispe", [0, 0, 0, 0] + Self.be32(width) + Self.be32(height))
            let meta = Self.box("meta", [0, 0, 0, 0] + Self.box("hdlr", Array(repeating: 0, count: 24)) + Self.box("iprp", Self.box("ipco", Self.box("colr", Array(repeating: 0, count: 12)) + ispe)))
            let bytes = Self.box("ftyp", Array("heic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8))
                + Self.box("free", Array(repeating: 0, count: 3_000_000)) + meta
            let url = dir.appendingPathComponent("far-\(width).heic")
            try Fixtures.write(bytes, to: url)
            return url
        }
        let small = HeaderReader(file: try MediaFile(path: try file(width: 640, height: 480).path))
        let sizes = try ImageHeader.heifImageSizes(small)
        #expect(sizes.count == 1 && sizes.first?.width == 640 && sizes.first?.height == 480)
        #expect(try HEIFFormat(type: .heif).workingMemory(small, request: Self.request) == 640 * 480 * 6 + 640 * 640 * 3 * 2)
        let huge = HeaderReader(file: try MediaFile(path: try file(width: 40_000, height: 40_000).path))
        do {
            _ = try HEIFFormat(type: .heif).workingMemory(huge, request: Self.request)
            Issue.record("a 40000x40000 HEIF behind 3 MB was not refused")
        } catch {
            #expect(error.code == .dimensionsTooLarge && error.description.contains("40000x40000"), "\(error)")
        }
    }

    @Test("a JPEG XL container with 3 MB of XML before its codestream decodes, whole or split in jxlp boxes",
          arguments: ["jxlc", "jxlp"])
    func jxlBehindBoxes(layout: String) throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let png = dir.appendingPathComponent("q.png"), plain = dir.appendingPathComponent("plain.jxl")
        try Fixtures.write(try PNGEncoder.encode(Fixtures.quadrants(width: 320, height: 240)), to: png)
        try FixtureCache.run("/usr/bin/cjxl", ["--quiet", "-d", "1", "--container=1", png.path, plain.path], output: plain.path)
        let container = try Fixtures.read(plain)
        // Its boxes: the signature, ftyp, then (at least) jxlc with the codestream.
        var boxes: [(type: String, payload: [UInt8])] = []
        var at = 0
        while at + 8 <= container.count {
            let size = Int(container[at]) << 24 | Int(container[at + 1]) << 16 | Int(container[at + 2]) << 8 | Int(container[at + 3])
            let end = size == 0 ? container.count : at + size
            boxes.append((String(decoding: container[(at + 4)..<(at + 8)], as: UTF8.self), Array(container[(at + 8)..<end])))
            at = end
        }
        let codestream = try #require(boxes.first { $0.type == "jxlc" }?.payload)
        let xml = Self.box("xml ", Self.metadataBody(3_000_000, marker: 0xE1))
        var bytes = boxes.filter { $0.type == "JXL " || $0.type == "ftyp" }.flatMap { Self.box($0.type, $0.payload) }
        if layout == "jxlc" {
            bytes += xml + Self.box("jxlc", codestream)
        } else {
            bytes += Self.box("jxlp", Self.be32(0) + Array(codestream.prefix(6))) + xml
                + Self.box("jxlp", Self.be32(0x8000_0001) + Array(codestream.dropFirst(6)))
        }
        let url = dir.appendingPathComponent("far.jxl")
        try Fixtures.write(bytes, to: url)
        try Self.expectQuadrants(url, layout)
    }
}
