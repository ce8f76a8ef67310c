import ArgumentParser
import Foundation
import MediaDecoding
import SensitivityAnalysis

/// `quarantine testcard FILE`: writes the harmless picture every check reports as sensitive.
struct TestCardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "testcard",
        abstract: "Write the synthetic test card: a harmless picture always reported as sensitive (TEST_CARD).",
        discussion: """
        Like the EICAR file for virus scanners, the card lets you check an installation end to end \
        without any real sensitive material: 'quarantine scan card.jpg' must flag it with TEST_CARD. \
        It is recognised after JPEG re-encoding, scaling and in video frames, also where it covers \
        only a part of the picture (a quarter of it at least, upright: a screenshot of the card, \
        letterboxed video; --inset draws one), and never in natural photos.
        The format follows the file name: .png writes PNG, anything else JPEG.

        Examples:
          quarantine testcard card.jpg && quarantine scan card.jpg
          quarantine testcard --size 1920x1080 --inset 50 screenshot.png

        Exit status: 0 written, 2 could not be written (a bad size, an existing file without --force, the folder: the message says which).
        """
    )

    @Option(name: .long, help: ArgumentHelp("Size in pixels, WIDTHxHEIGHT.", valueName: "WxH"))
    var size = "1024x1024"

    @Option(name: .long, help: ArgumentHelp("Draw the card over only this share of the picture's width and of its height, in the middle of a grey frame (50-100; 50 covers a quarter of the picture).", valueName: "percent"))
    var inset = 100

    @Option(name: .long, help: "JPEG quality, 1-100.")
    var quality = 90

    @Flag(name: .long, help: "Replace FILE if it exists.")
    var force = false

    @Argument(help: ArgumentHelp("Where to write the card.", valueName: "file"))
    var file: String

    func run() throws {
        let parts = size.lowercased().split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, (32...16384).contains(parts[0]), (32...16384).contains(parts[1]) else {
            throw ValidationError("--size must be WIDTHxHEIGHT, each 32 to 16384, e.g. 1024x1024")
        }
        guard (1...100).contains(quality) else { throw ValidationError("--quality must be 1 to 100") }
        guard (50...100).contains(inset) else { throw ValidationError("--inset must be 50 to 100 (the card must cover a quarter of the picture at least)") }
        if !force && FileManager.default.fileExists(atPath: file) { throw Self.exists(file) }
        let (width, height) = (parts[0], parts[1])
        let card: RGBImage
        if inset < 100 {
            let w = (width * inset + 99) / 100, h = (height * inset + 99) / 100
            guard min(w, h) >= 128 else { throw ValidationError("with --inset, the card must be 128 pixels on each side at least: make --size larger") }
            card = TestCard.render(width: w, height: h, on: RGBImage(width: width, height: height, filledWith: (128, 128, 128)),
                                   x: (width - w) / 2, y: (height - h) / 2)
        } else {
            card = TestCard.render(width: width, height: height)
        }
        let bytes: [UInt8]
        do {
            bytes = file.lowercased().hasSuffix(".png") ? try PNGEncoder.encode(card) : try JPEGCodec.encode(card, quality: quality)
        } catch {
            printError("quarantine: \(error)")
            throw ExitCode(2)
        }
        try Self.write(bytes, to: file, replacing: force)
        let placed = inset < 100 ? ", the card over \(inset) % of its width and height" : ""
        print("Wrote the test card to \(file) (\(width)x\(height)\(placed)). 'quarantine scan \(file)' must flag it as TEST_CARD.")
    }

    static func exists(_ file: String) -> ExitCode {
        printError("quarantine: \(file) already exists; not overwritten (use --force)")
        return ExitCode(2)
    }

    /// Written under its own name and nowhere else: no temporary file renamed into place (what
    /// Foundation's `createFile` does), which a service holding new files while it checks them
    /// (child mode, `hold_while_checking`) could take away before the rename, failing the write.
    static func write(_ bytes: [UInt8], to file: String, replacing: Bool) throws {
        let fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (replacing ? O_TRUNC : O_EXCL), 0o666)
        guard fd >= 0 else {
            if errno == EEXIST { throw exists(file) }
            printError("quarantine: \(file): cannot write: \(String(cString: strerror(errno)))")
            throw ExitCode(2)
        }
        var written = 0
        var failure: Int32 = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { failure = n < 0 ? errno : ENOSPC; break }
            written += n
        }
        if close(fd) != 0 && failure == 0 && errno != EINTR { failure = errno }
        guard failure == 0 else {
            // A card cut short is no card: one this run made is taken away again.
            if !replacing { unlink(file) }
            printError("quarantine: \(file): cannot write: \(String(cString: strerror(failure)))")
            throw ExitCode(2)
        }
    }
}
