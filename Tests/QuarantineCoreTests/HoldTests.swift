import Foundation
import MediaDecoding
import QuarantineStore
import SensitivityAnalysis
import Testing
import TestSupport
@testable import QuarantineCore
import Locking

/// Hold while checking, in process: a real vault, database and private folder; the analysis is
/// a stand-in (named so) that also looks at where the file is while it judges it.
@Suite("Hold while checking")
struct HoldTests {
    typealias Place = IntakeTests.Place

    /// What the stand-in saw while it judged a file.
    struct Seen: Sendable {
        var judgedPath: String
        var originalThere: Bool
        var folderMode: mode_t
        var folderOwner: uid_t
        var realFolder: String
    }

    final class Log: Sendable {
        let seen = Locked<[Seen]>([])
        init() {}
        func withLock<T>(_ body: (inout [Seen]) -> T) -> T { seen.withLock { body(&$0) } }
    }

    /// A stand-in analysis (sensitive or not) that records where the file is while judged.
    static func intake(_ place: Place, sensitive: Bool, seen: Log, original: String) -> Intake {
        let stand = IntakeTests.StandInAnalysis.judging(sensitive: sensitive)
        return Intake(vault: place.vault, holding: Holding(store: place.vault.store), blocking: { _, work in try work() },
                      analysis: { path, settings, _ in
            var folder = stat()
            stat((path as NSString).deletingLastPathComponent, &folder)
            let real = (try? FileManager.default.destinationOfSymbolicLink(atPath: (path as NSString).deletingLastPathComponent)) ?? ""
            seen.withLock { $0.append(Seen(judgedPath: path, originalThere: FileManager.default.fileExists(atPath: original),
                                           folderMode: folder.st_mode & 0o777, folderOwner: folder.st_uid, realFolder: real)) }
            return stand.answer(path, settings)
        })
    }

    func settings(_ mode: AnalysisMode, hold: Bool = false) -> Settings {
        var s = Settings()
        s.mode = mode
        s.agent.holdWhileChecking = hold
        return s
    }

    /// Everything "exactly as it was" compares, for the file at `path`.
    struct Snapshot: Equatable {
        var bytes: Data, mode: mode_t, uid: uid_t, gid: gid_t, mtime: Int, mtimeNs: Int, atime: Int, atimeNs: Int, xattr: String?, inode: ino_t
        init(_ path: String) throws {
            // Read without touching the access time (strictatime mounts update it on every read).
            let fd = open(path, O_RDONLY | 0o1000000 /* O_NOATIME */)
            guard fd >= 0 else { throw CocoaError(.fileReadNoSuchFile) }
            bytes = FileHandle(fileDescriptor: fd, closeOnDealloc: true).readDataToEndOfFile()
            var info = stat()
            lstat(path, &info)
            mode = info.st_mode; uid = info.st_uid; gid = info.st_gid; inode = info.st_ino
            mtime = info.st_mtim.tv_sec; mtimeNs = info.st_mtim.tv_nsec; atime = info.st_atim.tv_sec; atimeNs = info.st_atim.tv_nsec
            xattr = FFmpegTool.extendedAttribute(path, "user.xdg.origin.url")
        }
    }

    /// A file that arrived, with an odd mode, an old mtime and an origin attribute (and an
    /// access time of a minute ago, which `relatime` leaves alone when the test reads it).
    func arrive(_ place: Place, _ name: String, card: Bool = false, width: Int = 320) throws -> BacklogEntry {
        let entry = try place.arrive(name, try IntakeTests.png(card: card, width: width))
        chmod(entry.path, 0o640)
        var times = [timespec(tv_sec: time(nil) - 60, tv_nsec: 123_456_789), timespec(tv_sec: 1_500_000_000, tv_nsec: 987_654_321)]
        utimensat(AT_FDCWD, entry.path, &times, 0)
        try FFmpegTool.setExtendedAttribute(entry.path, "user.xdg.origin.url", "https://example.org/a.png")
        return BacklogEntry(path: entry.path, root: entry.root, direction: entry.direction, identity: try MediaFile(path: entry.path).identity)
    }

    @Test("child mode: out of reach while checked (renamed into a private 0700 folder), then back exactly as it was: bytes, mode, owner, times, xattrs, name, inode")
    func cleanComesBack() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try arrive(place, "photo.png")
        let before = try Snapshot(entry.path)
        let seen = Log()
        let outcome = await Self.intake(place, sensitive: false, seen: seen, original: entry.path).handle(entry, kind: .image, settings: settings(.child))
        guard case .clean = outcome else { Issue.record("\(outcome)"); return }
        let judged = try #require(seen.withLock { $0.first })
        #expect(judged.originalThere == false, "the file was still reachable under its name while checked")
        // Judged through the holding folder's descriptor; that folder is outside the watched folder.
        #expect(judged.judgedPath.hasPrefix("/proc/self/fd/"))
        #expect(judged.realFolder.hasPrefix(place.folder.appendingPathComponent("data").path + "/" + Holding.namePrefix), "\(judged.realFolder)")
        #expect(judged.folderMode == 0o700 && judged.folderOwner == geteuid())
        #expect(try Snapshot(entry.path) == before)
        #expect(try Holding(store: place.vault.store).heldFiles().isEmpty)
        // Back under its name it arrives again (inotify sees the rename): known, not judged again.
        let again = BacklogEntry(path: entry.path, root: entry.root, direction: .incoming, identity: try MediaFile(path: entry.path).identity)
        let second = await Self.intake(place, sensitive: false, seen: seen, original: entry.path).handle(again, kind: .image, settings: settings(.child))
        guard case .alreadySeen = second else { Issue.record("\(second)"); return }
        #expect(seen.withLock { $0.count } == 1)
    }

    @Test("flagged while held: hidden from the private folder, recorded at its own path, and a release puts it back there")
    func flaggedGoesToTheVault() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try arrive(place, "card.png", card: true)
        let before = try Snapshot(entry.path)
        let seen = Log()
        let outcome = await Self.intake(place, sensitive: true, seen: seen, original: entry.path).handle(entry, kind: .image, settings: settings(.child))
        guard case .hidden(let item, _, _, _) = outcome else { Issue.record("\(outcome)"); return }
        #expect(item.originalPath == entry.path)
        #expect(!FileManager.default.fileExists(atPath: entry.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: place.downloads.path).isEmpty, "nothing is left in the watched folder")
        let released = try place.vault.release(id: item.id!, mode: .child, actor: "guardian")
        #expect(released.path == entry.path)
        var after = try Snapshot(entry.path)
        after.inode = before.inode
        #expect(after == before)
    }

    @Test("unreadable while held: hidden as unverified straight from the private folder, no put-back tried, no error recorded")
    func unreadableHeld() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try arrive(place, "locked.png")
        // The stand-in digest fails as reading a file without permission does.
        let intake = Intake(vault: place.vault, holding: Holding(store: place.vault.store),
                            blocking: { _, _ in throw MediaError(.permissionDenied, "cannot be read", path: entry.path) },
                            analysis: { path, settings, _ in IntakeTests.StandInAnalysis.judging(sensitive: false).answer(path, settings) })
        let outcome = await intake.handle(entry, kind: .image, settings: settings(.child))
        guard case .unreadable(then: .hidden(_, let verdict, _, _)) = outcome else { Issue.record("\(outcome)"); return }
        #expect(verdict == .unverified)
        #expect(try place.vault.store.events().filter { $0.kind == .error }.map(\.detail) == [])
        #expect(try Holding(store: place.vault.store).heldFiles().isEmpty)
    }

    @Test("adult mode holds only with hold_while_checking")
    func adultOptsIn() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let seen = Log()
        let plain = try arrive(place, "plain.png")
        _ = await Self.intake(place, sensitive: false, seen: seen, original: plain.path).handle(plain, kind: .image, settings: settings(.adult))
        let opted = try arrive(place, "opted.png", width: 321)
        _ = await Self.intake(place, sensitive: false, seen: seen, original: opted.path).handle(opted, kind: .image, settings: settings(.adult, hold: true))
        let judged = seen.withLock { $0 }
        #expect(judged.map(\.originalThere) == [true, false])
        #expect(FileManager.default.fileExists(atPath: plain.path) && FileManager.default.fileExists(atPath: opted.path))
    }

    @Test("killed while a file is held: the next start puts it back, identical; a name taken meanwhile is never overwritten")
    func crashWhileHeld() throws {
        let place = try Place(); defer { place.cleanUp() }
        let first = try arrive(place, "one.png")
        let second = try arrive(place, "two.png")
        let before = try Snapshot(first.path)
        let holding = Holding(store: place.vault.store)
        // Held, then the process dies: no put-back ran.
        _ = try holding.hold(path: first.path, root: first.root)
        _ = try holding.hold(path: second.path, root: second.root)
        #expect(!FileManager.default.fileExists(atPath: first.path))
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: second.path))
        let lines = Holding(store: place.vault.store).recover()
        #expect(lines.count == 2)
        #expect(try Snapshot(first.path) == before)
        #expect(try String(contentsOfFile: second.path, encoding: .utf8) == "someone else's")
        #expect(FileManager.default.fileExists(atPath: place.downloads.appendingPathComponent("two (1).png").path))
        #expect(try holding.heldFiles().isEmpty)
    }
}
