import MediaDecoding

/// A preview so blurred that nothing identifiable remains: shrunk to at most 6 px on its long
/// side, blurred, then enlarged to 256 px, as JPEG. The tool never shows the original itself.
///
/// Its purpose is "something was here" (colours and their rough places), not the content. At
/// 24 px it was still a picture: the test card's 8×8 grid survived (`quarantine scan` of the
/// preview said TEST_CARD), NudeNet still found a face in a photo's preview, and a person saw a
/// figure and its clothes. Measured with the real models and the test card (card, square and
/// 4:3, and photos of testdata): the card is recognised at 24 px only; NudeNet finds nothing from
/// 16 px down; at 8 px a person's outline is still guessed, at 6 px only colour areas remain
/// (the size the review page already shrank previews to). Previews written before (24 px) are
/// made again from themselves when the vault is first claimed (``Vault/softenOldPreviews()``).
public enum BlurredPreview {
    public static let tinySide = 6
    public static let shownSide = 256

    public static func image(from picture: RGBImage, side: Int = tinySide) -> RGBImage {
        let scale = Double(side) / Double(max(picture.width, picture.height))
        let w = max(1, Int((Double(picture.width) * scale).rounded())), h = max(1, Int((Double(picture.height) * scale).rounded()))
        var tiny = picture.resizedPillowBilinear(width: w, height: h)
        tiny = boxBlur(tiny)
        // Enlarged to the picture's own proportions, not the tiny one's: at 6 px the rounding
        // alone (6x5 for a 4:3 picture) made a 4:3 card's preview 256x213.
        let big = Double(shownSide) / Double(max(picture.width, picture.height))
        return tiny.resizedPillowBilinear(width: max(1, Int((Double(picture.width) * big).rounded())),
                                          height: max(1, Int((Double(picture.height) * big).rounded())))
    }

    public static func jpeg(from picture: RGBImage, side: Int = tinySide) throws(MediaError) -> [UInt8] {
        try JPEGCodec.encode(image(from: picture, side: side), quality: 80)
    }

    /// A 3x3 box blur, edges clamped.
    static func boxBlur(_ image: RGBImage) -> RGBImage {
        var out = image.pixels
        for y in 0..<image.height {
            for x in 0..<image.width {
                for c in 0..<3 {
                    var sum = 0, n = 0
                    for dy in -1...1 {
                        for dx in -1...1 {
                            let sx = min(max(x + dx, 0), image.width - 1), sy = min(max(y + dy, 0), image.height - 1)
                            sum += Int(image.pixels[(sy * image.width + sx) * 3 + c]); n += 1
                        }
                    }
                    out[(y * image.width + x) * 3 + c] = UInt8(sum / n)
                }
            }
        }
        return RGBImage(width: image.width, height: image.height, pixels: out)
    }
}
