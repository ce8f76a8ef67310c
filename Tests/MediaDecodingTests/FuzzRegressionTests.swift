import Foundation
import Glibc
import Testing
@testable import MediaDecoding

/// What `make fuzz` found in the decoders (issue 16), each input kept in Tests/Fuzz/regressions.
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    static let regressions = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/regressions")

    /// The process's peak resident set, MiB.
    static var peakMiB: Int {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return usage.ru_maxrss / 1024
    }

    @Test("a 1.5 KB MP4 whose sample tables declare billions of entries is refused at once, without a 2 GiB allocation")
    func movTables() throws {
        let path = Self.regressions.appendingPathComponent("video/mov-tables-2gib").path
        let file = try MediaFile(path: path)
        #expect(file.type == .mp4)
        #expect(throws: MediaError.self) { _ = try VideoDecoder(file: file) }
        // Before libav*'s allocations were capped at 256 MiB: 2.8 GB resident and 5 s for this file.
        #expect(Self.peakMiB < 1500, "peak \(Self.peakMiB) MiB")
    }

    @Test("an AVIF whose AV1 item is empty is refused with a reason")
    func emptyAV1Item() throws {
        let path = Self.regressions.appendingPathComponent("picture/avif-empty-av1-item").path
        let file = try MediaFile(path: path)
        #expect(throws: MediaError.self) { _ = try ImageDecoder().decode(file) }
    }
}
