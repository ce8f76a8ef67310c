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
        It is recognised after JPEG re-encoding, scaling and in video frames, and never in natural photos.
        The format follows the file name: .png writes PNG, anything else JPEG.
        """
    )

    @Option(name: .long, help: ArgumentHelp("Size in pixels, WIDTHxHEIGHT.", valueName: "WxH"))
    var size = "1024x1024"

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
        if !force && FileManager.default.fileExists(atPath: file) {
            printError("quarantine: \(file) already exists; not overwritten (use --force)")
            throw ExitCode(2)
        }
        let card = TestCard.render(width: parts[0], height: parts[1])
        let bytes: [UInt8]
        do {
            bytes = file.lowercased().hasSuffix(".png") ? try PNGEncoder.encode(card) : try JPEGCodec.encode(card, quality: quality)
        } catch {
            printError("quarantine: \(error)")
            throw ExitCode(2)
        }
        guard FileManager.default.createFile(atPath: file, contents: Data(bytes)) else {
            printError("quarantine: \(file): cannot write")
            throw ExitCode(2)
        }
        print("Wrote the test card to \(file) (\(parts[0])x\(parts[1])). 'quarantine scan \(file)' must flag it as TEST_CARD.")
    }
}
