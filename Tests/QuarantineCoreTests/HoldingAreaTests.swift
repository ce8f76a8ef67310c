import CSystemShims
import Foundation
import MediaDecoding
import PathBytes
import QuarantineStore
import SensitivityAnalysis
import Testing
import TestSupport
@testable import QuarantineCore

/// The holding folder and the walks of the process that moves files: out of the watched
/// folders, pinned by identity, reached by descriptors; put back only into the folder a file
/// arrived in, and only if it is the account's. In process, on real folders.
@Suite("Holding area")
struct HoldingAreaTests {
    typealias Place = IntakeTests.Place

    func arrive(_ place: Place, _ name: String, card: Bool = false, width: Int = 320) throws -> BacklogEntry {
        try HoldTests().arrive(place, name, card: card, width: width)
    }

    func holdingFolders(_ place: Place) throws -> [String] {
        let data = place.folder.appendingPathComponent("data").path
        return try FileManager.default.contentsOfDirectory(atPath: data).filter { name in
            var info = stat()
            return lstat(data + "/" + name, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR && name != "vault"
        }
    }

    /// A photo held from the folder `sub` of the watched folder: the folder, the holding and the held file.
    func heldFromSub(_ place: Place) throws -> (sub: URL, holding: Holding, held: HeldFile) {
        let sub = place.downloads.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let path = sub.appendingPathComponent("photo.png").path
        try Data(try IntakeTests.png(card: false)).write(to: URL(fileURLWithPath: path))
        let holding = Holding(store: place.vault.store)
        return (sub, holding, try holding.hold(path: path, root: place.downloads.path))
    }

    @Test("held outside the watched folder, in a 0700 folder of ours; renamed by the account it is still used, and found again by identity after a restart")
    func renamedHoldingFolder() throws {
        let place = try Place(); defer { place.cleanUp() }
        let first = try arrive(place, "one.png")
        let holding = Holding(store: place.vault.store)
        let held = try holding.hold(path: first.path, root: first.root)
        #expect(!FileManager.default.fileExists(atPath: first.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: place.downloads.path).isEmpty)
        let folders = try holdingFolders(place)
        #expect(folders.count == 1 && folders[0].hasPrefix(Holding.namePrefix))
        let data = place.folder.appendingPathComponent("data").path
        var info = stat()
        #expect(lstat(data + "/" + folders[0], &info) == 0 && info.st_mode & 0o7777 == 0o700 && info.st_uid == geteuid())

        // The account renames it, and puts a folder of its own (and then a link) under the old name.
        #expect(rename(data + "/" + folders[0], data + "/renamed") == 0)
        #expect(mkdir(data + "/" + folders[0], 0o700) == 0)
        let second = try arrive(place, "two.png", width: 321)
        let heldSecond = try holding.hold(path: second.path, root: second.root)
        #expect(try FileManager.default.contentsOfDirectory(atPath: data + "/" + folders[0]).isEmpty, "the impostor was used")
        #expect(try FileManager.default.contentsOfDirectory(atPath: data + "/renamed").count == 2)
        // A restart: found by identity under its new name; both go back.
        let restarted = Holding(store: place.vault.store)
        #expect(restarted.keepHeld().count == 2)
        _ = try restarted.putBack(held)
        _ = try restarted.putBack(heldSecond)
        #expect(FileManager.default.fileExists(atPath: first.path) && FileManager.default.fileExists(atPath: second.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: data + "/" + folders[0]).isEmpty)
    }

    @Test("a name that is not UTF-8: held and put back under its own bytes")
    func rawBytesName() throws {
        let place = try Place(); defer { place.cleanUp() }
        let bytes: [UInt8] = Array(place.downloads.path.utf8) + Array("/odd-".utf8) + [0xFF, 0xFE] + Array(".png".utf8)
        let fd = open((bytes + [0]).map { CChar(bitPattern: $0) }, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        #expect(fd >= 0)
        let png = try IntakeTests.png(card: false)
        _ = png.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        let path = PathBytes.string(bytes)
        let holding = Holding(store: place.vault.store)
        let held = try holding.hold(path: path, root: place.downloads.path)
        var info = stat()
        #expect(lstat(PathBytes.cString(path), &info) != 0, "still under its name while held")
        let back = try holding.putBack(held)
        #expect(PathBytes.bytes(back.path) == bytes)
        #expect(lstat(PathBytes.cString(path), &info) == 0 && info.st_size == png.count)
    }

    @Test("the holding folder removed by the account while empty: a new one is made under a new random name")
    func removedHoldingFolder() throws {
        let place = try Place(); defer { place.cleanUp() }
        let holding = Holding(store: place.vault.store)
        let first = try arrive(place, "one.png")
        let held = try holding.hold(path: first.path, root: first.root)
        try holding.putBack(held)
        let data = place.folder.appendingPathComponent("data").path
        let old = try holdingFolders(place)
        #expect(old.count == 1)
        #expect(rmdir(data + "/" + old[0]) == 0)
        // Someone else's folder, recorded as if it were ours, is refused too (0755).
        let again = try holding.hold(path: first.path, root: first.root)
        #expect(!FileManager.default.fileExists(atPath: first.path))
        let now = try holdingFolders(place)
        #expect(now.count == 1 && now[0] != old[0])
        try holding.putBack(again)
        #expect(FileManager.default.fileExists(atPath: first.path))
    }

    @Test("a folder of the watched folder swapped for a symbolic link after the hold: the put-back never follows it, the file goes back into the folder it arrived in, wherever that is now")
    func swappedForALink() throws {
        let place = try Place(); defer { place.cleanUp() }
        let elsewhere = place.folder.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let (sub, holding, held) = try heldFromSub(place)
        #expect(rename(sub.path, place.downloads.appendingPathComponent("moved").path) == 0)
        #expect(symlink(elsewhere.path, sub.path) == 0)
        let back = try holding.putBack(held)
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty, "written through the link")
        // By its file handle (CAP_DAC_READ_SEARCH): into the very folder, now called "moved".
        #expect(FileManager.default.fileExists(atPath: place.downloads.appendingPathComponent("moved/photo.png").path), "\(back.path)")
    }

    @Test("without file handles (the unit's seccomp filter refuses open_by_handle_at): a folder swapped for a link is never followed, the file goes back into the watched folder itself")
    func swappedForALinkWithoutHandles() throws {
        let place = try Place(); defer { place.cleanUp() }
        let elsewhere = place.folder.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let (sub, holding, heldWithHandle) = try heldFromSub(place)
        var held = heldWithHandle
        held.folderHandle = nil
        #expect(rename(sub.path, place.downloads.appendingPathComponent("moved").path) == 0)
        #expect(symlink(elsewhere.path, sub.path) == 0)
        let back = try holding.putBack(held)
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty, "written through the link")
        #expect(back.path == place.downloads.appendingPathComponent("photo.png").path)
    }

    @Test("the folder it arrived in removed and made again (another folder): the watched folder itself takes it back, never the new one blindly")
    func folderGone() throws {
        let place = try Place(); defer { place.cleanUp() }
        let (sub, holding, held) = try heldFromSub(place)
        try FileManager.default.removeItem(at: sub)
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let back = try holding.putBack(held)
        #expect(back.path == place.downloads.appendingPathComponent("photo.png").path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: sub.path).isEmpty)
    }

    @Test("the folder it arrived in removed while another process has it open (a file manager, an indexer walking it): its handle still opens it, removed, where nothing can be made; the watched folder takes the file back")
    func folderRemovedButHeldOpen() throws {
        let place = try Place(); defer { place.cleanUp() }
        let (sub, holding, held) = try heldFromSub(place)
        // Held open, the removed folder stays in memory, and open_by_handle_at opens it (without
        // a holder it says ESTALE; an inotify watch does not keep it). `folderGone` above failed so
        // once under load (ENOENT: "cannot be put back", the file still held), presumably while a
        // test beside it that walks /tmp had this folder open.
        let keep = open(sub.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        try #require(keep >= 0)
        defer { close(keep) }
        try FileManager.default.removeItem(at: sub)
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        if let bytes = held.folderHandle, let type = held.folderHandleType {
            // What the fix answers (as root, where handles work): the handle opens a folder with no link left.
            let mount = open(place.downloads.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            defer { close(mount) }
            let opened = bytes.withUnsafeBytes { qsys_open_by_handle(mount, $0.baseAddress, bytes.count, type, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
            if opened >= 0 {
                var info = stat()
                #expect(fstat(opened, &info) == 0 && info.st_nlink == 0)
                close(opened)
            }
        }
        let back = try holding.putBack(held)
        #expect(back.path == place.downloads.appendingPathComponent("photo.png").path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: sub.path).isEmpty)
        #expect(holding.keepHeld().isEmpty)
    }

    @Test("never put back into a folder that is not the account's (root's, the service's): refused, it stays held")
    func notTheAccountsFolder() throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try arrive(place, "photo.png")
        // The account is someone else: the folder (ours) is not theirs.
        let holding = Holding(store: place.vault.store, account: geteuid() &+ 4242)
        let held = try holding.hold(path: entry.path, root: entry.root)
        #expect(throws: Holding.Failure.self) { try holding.putBack(held) }
        do { try holding.putBack(held) } catch let failure as Holding.Failure { #expect(failure.refusedPutBack, "\(failure)") }
        #expect(!FileManager.default.fileExists(atPath: entry.path))
        #expect(try holding.heldFiles().count == 1)
    }

    @Test("child mode: a clean file whose folder refuses it (not the account's) goes into the vault as unverified, with the reason")
    func refusedPutBackIsVaulted() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try arrive(place, "photo.png")
        let intake = Intake(vault: place.vault, holding: Holding(store: place.vault.store, account: geteuid() &+ 4242), blocking: { _, work in try work() },
                            analysis: { path, settings, _ in IntakeTests.StandInAnalysis.judging(sensitive: false).answer(path, settings) })
        var settings = Settings()
        settings.mode = .child
        let outcome = await intake.handle(entry, kind: .image, settings: settings)
        guard case .hidden(_, .unverified, let reasons, _) = outcome else { Issue.record("\(outcome)"); return }
        #expect(reasons.joined().contains("not to the account"), "\(reasons)")
        #expect(!FileManager.default.fileExists(atPath: entry.path))
    }

    @Test("a file with another name (hard link): unreachable through it while held (owner this service, mode 0000), its owner and mode exactly back after",
          .enabled(if: getuid() == 0, "giving a file to another account needs root"))
    func hardLinks() throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try arrive(place, "photo.png")
        let account: uid_t = 4242
        chown(place.downloads.path, account, 4242)
        chown(entry.path, account, 4243)
        chmod(entry.path, 0o640)
        let other = place.folder.appendingPathComponent("other-name.png").path
        #expect(link(entry.path, other) == 0)
        let holding = Holding(store: place.vault.store, account: account)
        let held = try holding.hold(path: entry.path, root: entry.root)
        var info = stat()
        #expect(lstat(other, &info) == 0)
        #expect(info.st_uid == geteuid() && info.st_mode & 0o7777 == 0, "the other name still reaches it: uid \(info.st_uid) mode \(String(info.st_mode & 0o7777, radix: 8))")
        #expect(held.linksLocked == true)
        try holding.putBack(held)
        #expect(lstat(entry.path, &info) == 0)
        #expect(info.st_uid == account && info.st_gid == 4243 && info.st_mode & 0o7777 == 0o640)
        #expect(lstat(other, &info) == 0 && info.st_uid == account && info.st_mode & 0o7777 == 0o640)
    }

    @Test("a flagged file with another name: the other name stays unreachable while it is in the vault; the vault records its own owner and mode; a release gives both names back exactly",
          .enabled(if: getuid() == 0, "giving a file to another account needs root"))
    func hardLinkThroughTheVault() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try arrive(place, "card.png", card: true)
        let account: uid_t = 4242
        chown(place.downloads.path, account, 4242)
        chown(entry.path, account, 4243)
        chmod(entry.path, 0o640)
        let other = place.folder.appendingPathComponent("other-name.png").path
        #expect(link(entry.path, other) == 0)
        let intake = Intake(vault: place.vault, holding: Holding(store: place.vault.store, account: account), blocking: { _, work in try work() },
                            analysis: { path, settings, _ in IntakeTests.StandInAnalysis.judging(sensitive: true).answer(path, settings) })
        var settings = Settings()
        settings.mode = .child
        let again = BacklogEntry(path: entry.path, root: entry.root, direction: .incoming, identity: try #require(FileIdentity(statAt: entry.path)))
        let outcome = await intake.handle(again, kind: .image, settings: settings)
        guard case .hidden(let item, .quarantined, _, _) = outcome else { Issue.record("\(outcome)"); return }
        var info = stat()
        #expect(lstat(other, &info) == 0 && info.st_uid == geteuid() && info.st_mode & 0o7777 == 0, "the other name reaches the vaulted file")
        #expect(item.uid == account && item.gid == 4243 && item.mode & 0o7777 == 0o640, "\(item.uid) \(String(item.mode & 0o7777, radix: 8))")
        let released = try place.vault.release(id: item.id!, mode: .child, actor: "guardian")
        #expect(lstat(released.path, &info) == 0 && info.st_uid == account && info.st_gid == 4243 && info.st_mode & 0o7777 == 0o640)
        #expect(lstat(other, &info) == 0 && info.st_uid == account && info.st_gid == 4243 && info.st_mode & 0o7777 == 0o640,
                "the other name did not get its owner and mode back: uid \(info.st_uid) mode \(String(info.st_mode & 0o7777, radix: 8))")
    }

    @Test("another filesystem and another name (hard link): the other name is locked while the copy is held, and gets its owner and mode back with the put-back",
          .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func otherFilesystemHardLink() throws {
        let place = try Place(); defer { place.cleanUp() }
        #expect(mount("tmpfs", place.downloads.path, "tmpfs", 0, "size=4m") == 0, "mount: \(String(cString: strerror(errno)))")
        defer { _ = umount2(place.downloads.path, Int32(MNT_DETACH)) }
        let account: uid_t = 4242
        chown(place.downloads.path, account, 4242)
        let path = place.downloads.appendingPathComponent("photo.png").path
        try Data(try IntakeTests.png(card: false)).write(to: URL(fileURLWithPath: path))
        chown(path, account, 4243)
        chmod(path, 0o640)
        let other = place.downloads.appendingPathComponent(".other-name").path
        #expect(link(path, other) == 0)
        let holding = Holding(store: place.vault.store, account: account)
        let held = try holding.hold(path: path, root: place.downloads.path)
        #expect(held.copied == true && held.linksLocked == true)
        var info = stat()
        #expect(lstat(other, &info) == 0 && info.st_uid == geteuid() && info.st_mode & 0o7777 == 0, "the other name reaches it while held")
        try holding.putBack(held)
        #expect(lstat(other, &info) == 0 && info.st_uid == account && info.st_gid == 4243 && info.st_mode & 0o7777 == 0o640,
                "uid \(info.st_uid) mode \(String(info.st_mode & 0o7777, radix: 8))")
        #expect(lstat(path, &info) == 0 && info.st_uid == account && info.st_mode & 0o7777 == 0o640)
    }

    @Test("a watched folder on another filesystem: held as a flushed copy in the service's own state, the original removed; put back with its bytes, owner, mode and times",
          .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func otherFilesystem() throws {
        let place = try Place(); defer { place.cleanUp() }
        #expect(mount("tmpfs", place.downloads.path, "tmpfs", 0, "size=4m") == 0, "mount: \(String(cString: strerror(errno)))")
        defer { _ = umount2(place.downloads.path, Int32(MNT_DETACH)) }
        let entry = try arrive(place, "photo.png")
        let before = try HoldTests.Snapshot(entry.path)
        let holding = Holding(store: place.vault.store)
        let held = try holding.hold(path: entry.path, root: entry.root)
        #expect(held.copied == true)
        #expect(!FileManager.default.fileExists(atPath: entry.path))
        #expect(FileManager.default.fileExists(atPath: place.folder.appendingPathComponent("data/holding-copies").path + "/" + held.heldName!))
        try holding.putBack(held)
        var after = try HoldTests.Snapshot(entry.path)
        after.inode = before.inode
        #expect(after == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: place.folder.appendingPathComponent("data/holding-copies").path).isEmpty)
    }
}
