import Testing
import PathBytes

/// File names are bytes: the lossless form, the bytes back, and the one display form (issue 11).
@Suite struct PathBytesTests {
    @Test("every byte string survives the round trip, including names that hold the escape characters themselves")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        var samples: [[UInt8]] = [
            Array("plain/ascii.png".utf8), Array("émoji-😀.jpg".utf8), [0x65, 0x76, 0x69, 0x6C, 0x2D, 0xFF, 0xFE, 0x2E, 0x70, 0x6E, 0x67],
            Array("\u{F780}\u{F7FF}-private-use.png".utf8), [0xEF, 0x9E, 0x80], [0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0xED, 0xA0, 0x80],
            Array("new\nline".utf8), [0x5C, 0x78, 0x46, 0x46],
        ]
        for _ in 0..<2_000 {
            samples.append((0..<Int.random(in: 1...24, using: &generator)).map { _ in UInt8.random(in: 1...255, using: &generator) })
        }
        for bytes in samples {
            let path = PathBytes.string(bytes)
            #expect(PathBytes.bytes(path) == bytes, "\(bytes)")
            #expect(PathBytes.cString(path).dropLast().map { UInt8(bitPattern: $0) } == bytes)
        }
        // Valid UTF-8 without the private-use range is kept as it is (no cost for normal names).
        #expect(PathBytes.string(Array("Ünïcode.png".utf8)) == "Ünïcode.png")
        #expect(PathBytes.string(Array("\u{F780}".utf8)) != "\u{F780}", "a real U+F780 is escaped, so it cannot pass for byte 0x80")
    }

    @Test("display: \\xFF for bytes that are not UTF-8, \\n and \\t for controls, \\\\ for a backslash, printable text as it is")
    func display() {
        #expect(PathBytes.display(PathBytes.string([0x65, 0x2D, 0xFF, 0xFE, 0x2E, 0x70])) == "e-\\xFF\\xFE.p")
        #expect(PathBytes.display("new\nline\tx") == "new\\nline\\tx")
        #expect(PathBytes.display("a\\b") == "a\\\\b")
        #expect(PathBytes.display("esc\u{1B}[31m") == "esc\\x1B[31m")
        #expect(PathBytes.display("Ünïcode 😀.png") == "Ünïcode 😀.png")
        #expect(!PathBytes.display("a\nb").contains("\n"))
        #expect(PathBytes.escapingRawBytes("line one\n" + PathBytes.string([0xFF])) == "line one\n\\xFF")
        #expect(PathBytes.base64(PathBytes.string([0xFF, 0xFE, 0x41])) == "//5B")
        #expect(PathBytes.base64("ab") == "YWI=")
    }
}
