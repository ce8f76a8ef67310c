import CPNGRows

/// Large PNGs through libpng, one row at a time, averaged down to analysis size as they are read
/// (see `qpng_read_reduced`): a 14000x14000 picture needs about 13 MiB instead of 750.
enum PNGRows {
    static func targetSize(width: Int, height: Int, request: DecodeRequest) -> (width: Int, height: Int) {
        FFmpeg.reducedSize(width: width, height: height, minimumLongSide: request.minimumLongSide,
                           minimumShortSide: request.minimumShortSide, alwaysShrink: true)
    }

    /// `partialAllowed`: a PNG whose data ends after some rows is the picture so far (the rest
    /// grey), with `partialReason` set.
    static func decodeReduced(_ bytes: [UInt8], width: Int, height: Int, request: DecodeRequest, alwaysShrink: Bool = true,
                              partialAllowed: Bool = true) throws(MediaError) -> DecodedImage {
        let target = alwaysShrink ? targetSize(width: width, height: height, request: request)
            : FFmpeg.reducedSize(width: width, height: height, minimumLongSide: request.minimumLongSide, minimumShortSide: request.minimumShortSide)
        var pixels = [UInt8](repeating: 128, count: target.width * target.height * 3)
        var result = qpng_result()
        let status = bytes.withUnsafeBufferPointer { src in
            pixels.withUnsafeMutableBufferPointer { dst in
                qpng_read_reduced(src.baseAddress, src.count, Int32(request.limits.maxDimension), Int32(target.width), Int32(target.height),
                                  dst.baseAddress, &result)
            }
        }
        if status != 0 {
            let message = withUnsafeBytes(of: result.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if result.truncated != 0 && partialAllowed && result.rows_read > 0 {
                return DecodedImage(image: RGBImage(width: target.width, height: target.height, pixels: pixels),
                                    originalWidth: Int(result.width), originalHeight: Int(result.height), type: .png, partialReason: DecodedImage.endsEarly)
            }
            if result.truncated != 0 {
                throw MediaError(.truncated, "is a truncated PNG (the data ends before the picture does)", cause: message, operation: "png_read_row")
            }
            throw MediaError(.corrupt, "is a corrupt PNG", cause: message, operation: "png_read_row")
        }
        return DecodedImage(image: RGBImage(width: target.width, height: target.height, pixels: pixels),
                            originalWidth: Int(result.width), originalHeight: Int(result.height), type: .png)
    }
}
