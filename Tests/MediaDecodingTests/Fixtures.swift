import Foundation
import TestSupport
@testable import MediaDecoding

/// Builds test inputs at run time: nothing binary is committed.
enum Fixtures {
    /// A fresh temporary folder for one test.
    static func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-media-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A picture with four coloured quadrants: red top-left, green top-right, blue bottom-left,
    /// white bottom-right. Orientation and channel order show in where each colour lands.
    static func quadrants(width: Int = 64, height: Int = 48) -> RGBImage {
        var px = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let right = x >= width / 2, bottom = y >= height / 2
                let rgb: (UInt8, UInt8, UInt8) = switch (right, bottom) {
                case (false, false): (255, 0, 0)
                case (true, false): (0, 255, 0)
                case (false, true): (0, 0, 255)
                case (true, true): (255, 255, 255)
                }
                let p = (y * width + x) * 3
                px[p] = rgb.0; px[p + 1] = rgb.1; px[p + 2] = rgb.2
            }
        }
        return RGBImage(width: width, height: height, pixels: px)
    }

    /// The colour at (x, y).
    static func pixel(_ image: RGBImage, _ x: Int, _ y: Int) -> (Int, Int, Int) {
        let p = (y * image.width + x) * 3
        return (Int(image.pixels[p]), Int(image.pixels[p + 1]), Int(image.pixels[p + 2]))
    }

    static func close(_ a: (Int, Int, Int), _ b: (Int, Int, Int), tolerance: Int = 40) -> Bool {
        abs(a.0 - b.0) <= tolerance && abs(a.1 - b.1) <= tolerance && abs(a.2 - b.2) <= tolerance
    }

    /// A JPEG with an EXIF APP1 segment carrying `orientation`, inserted after SOI.
    static func jpegWithOrientation(_ jpeg: [UInt8], orientation: UInt16) -> [UInt8] {
        // TIFF, big-endian: header, IFD0 with one entry (0x0112 SHORT 1 = orientation), next IFD 0.
        var tiff: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1]
        tiff += [UInt8(orientation >> 8), UInt8(orientation & 0xFF), 0, 0, 0, 0, 0, 0]
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let length = payload.count + 2
        let segment: [UInt8] = [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
        return Array(jpeg[0..<2]) + segment + Array(jpeg[2...])
    }

    /// Runs the ffmpeg command-line tool (installed by `make setup`) and fails loudly without it.
    static func ffmpeg(_ arguments: [String]) throws { try FFmpegTool.run(arguments) }

    static func write(_ bytes: [UInt8], to url: URL) throws {
        try Data(bytes).write(to: url)
    }

    static func read(_ url: URL) throws -> [UInt8] { [UInt8](try Data(contentsOf: url)) }
}
