import Foundation
import Testing
import TestSupport
import CFFmpeg
@testable import MediaDecoding

/// Bounded decode memory (issue 11): large PNGs decoded row by row and reduced on the way, a
/// budget shared by all decodes, and pictures too large for it refused before anything is read.
@Suite struct LargePictureTests {
    /// A PNG written by hand (stored deflate blocks, so no zlib is needed): 8-bit RGB or 16-bit
    /// RGBA, plain or Adam7-interlaced. ffmpeg's encoder writes neither interlaced nor 16-bit
    /// alpha pictures, and the row-by-row path must read both.
    static func png(_ image: RGBImage, interlaced: Bool = false, sixteenBitAlpha: Bool = false) -> [UInt8] {
        var raw: [UInt8] = []
        raw.reserveCapacity(image.pixels.count * (sixteenBitAlpha ? 3 : 1) + image.height * 8)
        func row(_ y: Int, columns: StrideTo<Int>) {
            raw.append(0) // filter: none
            image.pixels.withUnsafeBufferPointer { px in
                for x in columns {
                    let p = (y * image.width + x) * 3
                    if sixteenBitAlpha {
                        for c in 0..<3 { raw.append(px[p + c]); raw.append(0x5A) }
                        raw.append(UInt8(x & 0xFF)); raw.append(0) // alpha varies: it must be ignored
                    } else {
                        raw.append(px[p]); raw.append(px[p + 1]); raw.append(px[p + 2])
                    }
                }
            }
        }
        if interlaced {
            let passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
            for (x0, y0, dx, dy) in passes where x0 < image.width && y0 < image.height {
                for y in stride(from: y0, to: image.height, by: dy) { row(y, columns: stride(from: x0, to: image.width, by: dx)) }
            }
        } else {
            for y in 0..<image.height { row(y, columns: stride(from: 0, to: image.width, by: 1)) }
        }
        var zlib: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let n = min(65535, raw.count - offset)
            let last: UInt8 = offset + n == raw.count ? 1 : 0
            zlib += [last, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            zlib += raw[offset..<(offset + n)]
            offset += n
        } while offset < raw.count
        var a: UInt32 = 1, b: UInt32 = 0
        raw.withUnsafeBufferPointer { bytes in
            for byte in bytes { a = (a + UInt32(byte)) % 65521; b = (b + a) % 65521 }
        }
        zlib += be32(b << 16 | a)

        var ihdr = be32(UInt32(image.width)) + be32(UInt32(image.height))
        ihdr += [sixteenBitAlpha ? 16 : 8, sixteenBitAlpha ? 6 : 2, 0, 0, interlaced ? 1 : 0]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", ihdr) + chunk("IDAT", zlib) + chunk("IEND", [])
    }

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        var crc: UInt32 = 0xFFFF_FFFF
        // A byte at a time from the table (bit by bit, the CRC of the 16-bit pictures' 10 MB
        // IDAT was most of this suite's CPU in an unoptimised build; issue 27's suite time).
        crcTable.withUnsafeBufferPointer { table in
            body.withUnsafeBufferPointer { bytes in
                for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
            }
        }
        return be32(UInt32(data.count)) + body + be32(~crc)
    }

    /// The CRC-32 (polynomial 0xEDB88320) of every byte value, for ``chunk(_:_:)``.
    static let crcTable: [UInt32] = (0..<256).map { (value: Int) -> UInt32 in
        var crc = UInt32(value)
        for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? 0xEDB8_8320 : 0) }
        return crc
    }

    /// A smooth picture with structure in both directions, so averaging errors would show.
    static func gradient(width: Int, height: Int) -> RGBImage {
        var px = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let p = (y * width + x) * 3
                px[p] = UInt8(x * 255 / max(1, width - 1))
                px[p + 1] = UInt8(y * 255 / max(1, height - 1))
                px[p + 2] = ((x / 40 + y / 40) % 2 == 0) ? 200 : 30
            }
        }
        return RGBImage(width: width, height: height, pixels: px)
    }

    static func meanDifference(_ a: RGBImage, _ b: RGBImage) -> Double {
        precondition(a.width == b.width && a.height == b.height)
        var total = 0
        for i in 0..<a.pixels.count { total += abs(Int(a.pixels[i]) - Int(b.pixels[i])) }
        return Double(total) / Double(a.pixels.count)
    }

    /// The analyzer's request (640 px long side, 512 short), with the row-by-row threshold low
    /// enough that small test pictures take that path.
    static func decoder(rowByRow: Bool, budget: Int = 256 << 20) -> ImageDecoder {
        var limits = MediaLimits(decodeMemoryBytes: budget)
        limits.rowByRowPixels = rowByRow ? 1 : .max
        return ImageDecoder(limits: limits, minimumLongSide: 640, minimumShortSide: 512)
    }

    @Test("row by row gives the picture that decoding whole and shrinking gives, for every PNG layout")
    func rowByRowMatchesWhole() throws {
        let picture = Self.gradient(width: 1280, height: 1024)
        let whole = try Self.decoder(rowByRow: false).decode(try PNGEncoder.encode(picture))
        for (interlaced, sixteen) in [(false, false), (true, false), (false, true), (true, true)] {
            let bytes = Self.png(picture, interlaced: interlaced, sixteenBitAlpha: sixteen)
            let rows = try Self.decoder(rowByRow: true).decode(bytes)
            #expect(rows.image.width == whole.image.width && rows.image.height == whole.image.height)
            #expect(rows.originalWidth == 1280 && rows.originalHeight == 1024)
            let difference = Self.meanDifference(rows.image, whole.image)
            #expect(difference < 2, "interlaced \(interlaced), 16-bit RGBA \(sixteen): mean difference \(difference)")
        }
    }

    @Test("the working memory of a huge PNG is its output, not its size; decoded whole it would be 750 MiB")
    func workingMemory() throws {
        let header = Self.png(RGBImage(width: 1, height: 1, filledWith: (0, 0, 0)))
        var huge = header
        huge.replaceSubrange(16..<24, with: Self.be32(14_000) + Self.be32(14_000))
        let request = Self.decoder(rowByRow: false).request
        let rowByRow = try PNGFormat().workingMemory(huge, request: DecodeRequest(minimumLongSide: 640, minimumShortSide: 512, limits: .default))
        #expect(rowByRow < 16 << 20, "\(rowByRow >> 20) MiB")
        let whole = try FFmpegPictureFormat(type: .png, codec: AV_CODEC_ID_PNG, signature: PNGFormat.signature).workingMemory(huge, request: request)
        #expect(whole > 700 << 20, "\(whole >> 20) MiB")
    }

    @Test("a PNG that ends early, read row by row: the rows that arrived, the rest grey, marked partial; one that ends in its header is truncated")
    func truncatedRowByRow() throws {
        let picture = Self.gradient(width: 400, height: 300)
        let bytes = Self.png(picture)
        let half = try Self.decoder(rowByRow: true).decode(Array(bytes.prefix(bytes.count / 2)))
        #expect(half.partialReason != nil)
        let image = half.image
        func pixel(_ x: Int, _ y: Int) -> [UInt8] { Array(image.pixels[((y * image.width + x) * 3)..<((y * image.width + x) * 3 + 3)]) }
        #expect(pixel(image.width / 2, image.height / 5)[1] < 80, "the top rows arrived (green grows downwards)")
        #expect(pixel(image.width / 2, image.height - 1) == [128, 128, 128], "the missing bottom is grey")
        do {
            _ = try Self.decoder(rowByRow: true).decode(Array(bytes.prefix(60)))
            Issue.record("a PNG cut in its header decoded")
        } catch {
            #expect([.truncated, .corrupt].contains(error.code), "\(error)")
        }
    }

    @Test("a picture that alone needs more than the budget is refused before it is read")
    func overBudgetRefused() throws {
        let dir = try Fixtures.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("wide.bmp")
        // A 3000x2000 BMP decoded whole: 24 MB of frame, over a 16 MiB budget.
        try FFmpegTool.run(["-f", "lavfi", "-i", "color=c=gray:size=3000x2000", "-frames:v", "1", url.path])
        let tight = Self.decoder(rowByRow: false, budget: 16 << 20)
        do {
            _ = try tight.decode(try MediaFile(path: url.path))
            Issue.record("decoded over the budget")
        } catch {
            #expect(error.code == .dimensionsTooLarge)
            #expect(error.description.contains("decode memory budget of 16 MiB"), "\(error)")
        }
        #expect(tight.budget.peak == 0)
        let roomy = Self.decoder(rowByRow: false, budget: 64 << 20)
        _ = try roomy.decode(try MediaFile(path: url.path))
        #expect(roomy.budget.peak > 24_000_000 && roomy.budget.inUse == 0)
    }

    @Test("a progressive JPEG's frame header is read, and its coefficient memory counted")
    func progressiveJPEG() throws {
        var jpeg = try JPEGCodec.encode(Self.gradient(width: 800, height: 600), quality: 80)
        let request = Self.decoder(rowByRow: false).request
        let baseline = try JPEGFormat().workingMemory(jpeg, request: request)
        let frame = try #require(ImageHeader.jpegFrame(jpeg))
        #expect(frame.width == 800 && frame.height == 600 && !frame.progressive && frame.sampling.count == 3)
        // Relabel SOF0 as SOF2: the estimate must then include every coefficient (4:2:0: 1.5
        // samples a pixel, 2 bytes each).
        let sof = try #require(jpeg.indices.first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 })
        jpeg[sof + 1] = 0xC2
        #expect(try #require(ImageHeader.jpegFrame(jpeg)).progressive)
        let progressive = try JPEGFormat().workingMemory(jpeg, request: request)
        #expect(progressive - baseline >= 800 * 600 * 3)
    }

    @Test("large pictures wait for each other: reservations never exceed the budget")
    func budgetWaits() async throws {
        let budget = DecodeMemoryBudget(capacity: 100)
        let inside = Counter()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                        Thread.detachNewThread {
                            budget.withReservation(60) {
                                inside.change(+1)
                                usleep(30_000)
                                inside.change(-1)
                            }
                            done.resume()
                        }
                    }
                }
            }
        }
        #expect(inside.most == 1, "two 60-byte reservations ran at once in a budget of 100")
        #expect(budget.peak == 60 && budget.inUse == 0)
        // A reservation over the capacity is clamped to it (it runs alone).
        budget.withReservation(1_000) { #expect(budget.inUse == 100) }
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var now = 0
        private(set) var most = 0
        func change(_ delta: Int) { lock.withLock { now += delta; most = max(most, now) } }
    }
}

