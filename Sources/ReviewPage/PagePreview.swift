import MediaDecoding

/// The preview as the page shows it: the vault's blurred preview softened to `side` pixels on
/// its long side and enlarged again, so that not even the test card's 8×8 grid survives in what
/// the screen shows (`quarantine scan` on a screenshot's crop must not recognise it). The vault
/// writes its previews at this size now (``BlurredPreview``) and makes older 24-px ones again at
/// its claim; this still softens any it is given. Only colours and their rough places remain until Show.
enum PagePreview {
    static let side = 6
    /// The size the page shows a preview at (the vault's previews are this size too).
    static let shownSide = 256

    /// `jpeg` softened, as JPEG; nil when it cannot be read (then nothing is shown).
    static func soften(_ jpeg: [UInt8]) -> [UInt8]? {
        guard let decoded = try? JPEGCodec.decode(jpeg) else { return nil }
        let picture = decoded.image
        let long = max(picture.width, picture.height)
        guard long > 0 else { return nil }
        let scale = Double(side) / Double(long)
        let tiny = picture.resizedPillowBilinear(width: max(1, Int((Double(picture.width) * scale).rounded())),
                                                 height: max(1, Int((Double(picture.height) * scale).rounded())))
        let big = Double(shownSide) / Double(long)
        let shown = tiny.resizedPillowBilinear(width: max(1, Int((Double(picture.width) * big).rounded())),
                                               height: max(1, Int((Double(picture.height) * big).rounded())))
        return try? JPEGCodec.encode(shown, quality: 80)
    }
}
