import CSystemShims
import Foundation
import GRDB
import MediaDecoding
import Testing
@testable import QuarantineStore
import Locking

/// Releases and recoveries that never resolve a path through a folder the account can change:
/// back into the folder a file arrived in (by identity), only if it is the account's; a crash's
/// recovery acts on the folders recorded by identity. On real files in fresh temporary folders.
@Suite("Vault releases by identity")
struct VaultReleaseTests {
    typealias Place = VaultTests.Place

    /// The arrival record of a file in `folder` (below Downloads), for `account`, taken now.
    func arrival(_ place: Place, folder: URL, account: uid_t = geteuid()) -> Vault.Arrival {
        let fd = open(folder.path, Holding.O_PATH | O_DIRECTORY)
        defer { close(fd) }
        var info = stat()
        fstat(fd, &info)
        let handle = Holding.handle(of: fd)
        let relative = String(folder.path.dropFirst(place.downloads.path.count)).split(separator: "/").joined(separator: "/")
        return Vault.Arrival(root: place.downloads.path, relativeFolder: relative, device: Int64(bitPattern: UInt64(info.st_dev)),
                             inode: Int64(bitPattern: UInt64(info.st_ino)), handle: handle?.bytes, handleType: handle?.type, account: Int64(account))
    }

    /// Quarantines `url` as a service holding it would: its arrival folder recorded for `account`.
    func hide(_ place: Place, _ url: URL, account: uid_t = geteuid()) throws -> VaultItem {
        let arrived = arrival(place, folder: url.deletingLastPathComponent(), account: account)
        let item = try place.vault.quarantine(path: url.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .child, actor: "test")
        try place.vault.recordArrival(arrived, of: item.id!)
        return item
    }

    /// A download moved into the folder `sub` of Downloads: the folder and the file.
    func downloadedIntoSub(_ place: Place) throws -> (sub: URL, url: URL) {
        let sub = place.downloads.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let (downloaded, _) = try place.download("a.jpg")
        let url = sub.appendingPathComponent("a.jpg")
        try FileManager.default.moveItem(at: downloaded, to: url)
        return (sub, url)
    }

    @Test("the folder it arrived in swapped for a symbolic link while the file was held, before it was hidden: the release writes nothing where the link points")
    func swappedFolder() throws {
        let place = try Place(); defer { place.cleanUp() }
        let victim = place.home.appendingPathComponent("victim")
        try FileManager.default.createDirectory(at: victim, withIntermediateDirectories: true)
        let (sub, url) = try downloadedIntoSub(place)
        // Held (out of the folder) when it arrived; the folder swapped while it was checked; then hidden.
        let arrived = arrival(place, folder: sub)
        let holding = place.home.appendingPathComponent("holding")
        try FileManager.default.createDirectory(at: holding, withIntermediateDirectories: true)
        #expect(rename(url.path, holding.appendingPathComponent("x").path) == 0)
        #expect(rename(sub.path, place.downloads.appendingPathComponent("moved").path) == 0)
        #expect(symlink(victim.path, sub.path) == 0)
        let item = try place.vault.quarantine(path: holding.appendingPathComponent("x").path, recordedAs: url.path, expected: nil, reasons: ["TEST_CARD 1.00"],
                                              mode: .child, actor: "test")
        try place.vault.recordArrival(arrived, of: item.id!)
        let released = try place.vault.release(id: item.id!, mode: .child, actor: "test")
        #expect(try FileManager.default.contentsOfDirectory(atPath: victim.path).isEmpty, "written through the link: \(released.path)")
        #expect(!released.path.hasPrefix(victim.path))
        #expect(FileManager.default.fileExists(atPath: released.path))
    }

    @Test("the folder it arrived in removed while another process has it open (a file manager, an indexer walking it): its handle opens it, removed; the release goes into the watched folder")
    func arrivalFolderRemovedButHeldOpen() throws {
        let place = try Place(); defer { place.cleanUp() }
        let (sub, url) = try downloadedIntoSub(place)
        let item = try hide(place, url)
        // Held open, the removed folder stays in memory and its handle opens it (ESTALE without a holder).
        let keep = open(sub.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        try #require(keep >= 0)
        defer { close(keep) }
        try FileManager.default.removeItem(at: sub)
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let released = try place.vault.release(id: item.id!, mode: .child, actor: "test")
        #expect(released.path == place.downloads.appendingPathComponent("a.jpg").path)
        #expect(FileManager.default.fileExists(atPath: released.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: sub.path).isEmpty, "the new folder of the same name is another")
        #expect(try place.vault.store.item(item.id!)?.status == .released)
    }

    @Test("never released into a folder that is not the account's (root's, the service's): refused, it stays in the vault")
    func notTheAccounts() throws {
        let place = try Place(); defer { place.cleanUp() }
        let (url, _) = try place.download("a.jpg")
        let item = try hide(place, url, account: geteuid() &+ 4242)
        #expect(throws: VaultError.self) { try place.vault.release(id: item.id!, mode: .child, actor: "test") }
        #expect(try place.vault.store.item(item.id!)?.status == .quarantined)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("killed in a release after the rename, then the folder swapped for a link: the recovery changes nothing where the link points")
    func recoveryIgnoresTheSwap() throws {
        let place = try Place(); defer { place.cleanUp() }
        let (url, _) = try place.download("a.jpg")
        let item = try place.vault.quarantine(path: url.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .adult, actor: "test")
        let crashing = try Vault(root: place.vault.root, store: place.vault.store) { step in
            if step == .inPlace { throw Vault.SimulatedCrash() }
        }
        #expect(throws: Vault.SimulatedCrash.self) { try crashing.release(id: item.id!, mode: .adult, actor: "test") }
        // The account swaps the folder the journal names for a link to a file of someone else's.
        let victim = place.home.appendingPathComponent("victim")
        try FileManager.default.createDirectory(at: victim, withIntermediateDirectories: true)
        let victimFile = victim.appendingPathComponent("a.jpg")
        try Data("someone else's".utf8).write(to: victimFile)
        chmod(victimFile.path, 0o600)
        var times = [timespec(tv_sec: 1_000, tv_nsec: 0), timespec(tv_sec: 2_000, tv_nsec: 0)]
        utimensat(AT_FDCWD, victimFile.path, &times, 0)
        #expect(rename(place.downloads.path, place.home.appendingPathComponent("Downloads-moved").path) == 0)
        #expect(symlink(victim.path, place.downloads.path) == 0)
        let next = try Vault(root: place.vault.root, store: AuditStore(path: place.vault.store.path))
        let lines = try #require(try next.recoverIfIdle())
        #expect(lines.count == 1, "\(lines)")
        var info = stat()
        #expect(lstat(victimFile.path, &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o600 && info.st_mtim.tv_sec == 2_000, "the recovery changed the file behind the link: \(String(info.st_mode & 0o7777, radix: 8))")
        #expect(try String(contentsOf: victimFile, encoding: .utf8) == "someone else's")
    }

    @Test("a folder made again on a release by a service belongs to the file's owner, mode 0755 (not the service's, not 0700)",
          .enabled(if: getuid() == 0, "giving a file to another account needs root"))
    func recreatedFolderOwner() throws {
        let place = try Place(); defer { place.cleanUp() }
        let (sub, url) = try downloadedIntoSub(place)
        chown(url.path, 4242, 4243)
        let item = try place.vault.quarantine(path: url.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .adult, actor: "test")
        try FileManager.default.removeItem(at: sub)
        let released = try place.vault.release(id: item.id!, mode: .adult, actor: "test")
        #expect(released.path == url.path)
        var info = stat()
        #expect(lstat(sub.path, &info) == 0)
        #expect(info.st_uid == 4242 && info.st_gid == 4243 && info.st_mode & 0o7777 == 0o755, "uid \(info.st_uid) mode \(String(info.st_mode & 0o7777, radix: 8))")
    }
}
