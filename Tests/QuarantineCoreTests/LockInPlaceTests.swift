import Foundation
import MediaDecoding
import QuarantineStore
import Testing

/// Child mode's last resort (``Holding/lockInPlace(path:root:expected:)``): a file that could be
/// neither held nor moved into the vault is locked where it is, on real files.
@Suite("Lock in place")
struct LockInPlaceTests {
    typealias Place = IntakeTests.Place

    @Test("the judged version is locked where it is (the service's, mode 0000); another file at that name, or a folder swapped for a link, is not touched")
    func locksOnlyTheJudgedVersion() throws {
        let place = try Place(); defer { place.cleanUp() }
        let holding = Holding(store: place.vault.store, account: 4242)
        let entry = try place.arrive("card.png", try IntakeTests.png(card: true))
        #expect(chown(entry.path, 4242, 4242) == 0 && chmod(entry.path, 0o644) == 0)
        let judged = try #require(FileIdentity(statAt: entry.path))
        try holding.lockInPlace(path: entry.path, root: entry.root, expected: judged)
        var info = stat()
        #expect(lstat(entry.path, &info) == 0 && info.st_uid == geteuid() && info.st_mode & 0o7777 == 0, "owner \(info.st_uid), mode \(String(info.st_mode & 0o7777, radix: 8))")
        // The lock's own change brings it back to the intake, which recognises it (it looped, judging it every 20 ms).
        #expect(holding.isLockedInPlace(entry.path))
        #expect(!Holding(store: place.vault.store).isLockedInPlace(entry.path), "a person's own agent locks nothing")

        // Replaced by another file after the verdict: refused, the other file keeps its owner and mode.
        let other = try place.arrive("other.png", try IntakeTests.png(card: false))
        #expect(chown(other.path, 4242, 4242) == 0 && chmod(other.path, 0o644) == 0)
        let otherIdentity = try #require(FileIdentity(statAt: other.path))
        #expect(unlink(other.path) == 0)
        try Data(try IntakeTests.png(card: false, width: 99)).write(to: URL(fileURLWithPath: other.path))
        #expect(chown(other.path, 4242, 4242) == 0)
        #expect(throws: Holding.Failure.self) { try holding.lockInPlace(path: other.path, root: other.root, expected: otherIdentity) }
        #expect(lstat(other.path, &info) == 0 && info.st_uid == 4242 && info.st_mode & 0o777 == 0o644)
        #expect(!holding.isLockedInPlace(other.path))

        // Its folder swapped for a link to somewhere else: no link is followed.
        let sub = place.downloads.appendingPathComponent("sub")
        let elsewhere = place.folder.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let target = elsewhere.appendingPathComponent("x.png")
        try Data(try IntakeTests.png(card: false, width: 77)).write(to: target)
        #expect(chown(target.path, 4242, 4242) == 0 && chmod(target.path, 0o644) == 0)
        #expect(symlink(elsewhere.path, sub.path) == 0)
        let targetIdentity = try #require(FileIdentity(statAt: target.path))
        #expect(throws: Holding.Failure.self) { try holding.lockInPlace(path: sub.path + "/x.png", root: entry.root, expected: targetIdentity) }
        #expect(lstat(target.path, &info) == 0 && info.st_uid == 4242 && info.st_mode & 0o777 == 0o644)

        // A person's own agent (the account is this process's) locks nothing.
        let own = Holding(store: place.vault.store)
        #expect(throws: Holding.Failure.self) { try own.lockInPlace(path: other.path, root: other.root, expected: try #require(FileIdentity(statAt: other.path))) }
    }
}
