import MediaDecoding

extension RGBImage {
    /// The picture as an uncompressed 24-bit BMP file (BITMAPINFOHEADER, rows bottom-up, each
    /// padded to 4 bytes): how the agent hands pixels it holds (a stream's raw frame, already
    /// converted) to the analysis worker, which takes files only. Nothing is lost and nothing is
    /// compressed, so writing it costs one copy.
    func bitmapFile() -> [UInt8] {
        let rowBytes = (width * 3 + 3) & ~3
        let dataBytes = rowBytes * height
        let headerBytes = 14 + 40
        var file = [UInt8](repeating: 0, count: headerBytes + dataBytes)
        func put32(_ value: Int, at offset: Int) {
            for i in 0..<4 { file[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * i)) }
        }
        file[0] = UInt8(ascii: "B")
        file[1] = UInt8(ascii: "M")
        put32(file.count, at: 2)
        put32(headerBytes, at: 10)
        put32(40, at: 14)
        put32(width, at: 18)
        put32(height, at: 22)
        file[26] = 1   // planes
        file[28] = 24  // bits per pixel; compression (30) stays 0: BI_RGB
        put32(dataBytes, at: 34)
        put32(2835, at: 38)  // 72 dpi, both ways
        put32(2835, at: 42)
        pixels.withUnsafeBufferPointer { src in
            file.withUnsafeMutableBufferPointer { dst in
                for row in 0..<height {
                    let from = row * width * 3
                    let to = headerBytes + (height - 1 - row) * rowBytes
                    for x in 0..<width {
                        dst[to + x * 3] = src[from + x * 3 + 2]
                        dst[to + x * 3 + 1] = src[from + x * 3 + 1]
                        dst[to + x * 3 + 2] = src[from + x * 3]
                    }
                }
            }
        }
        return file
    }
}
