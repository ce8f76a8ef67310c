import CSystemShims
import Foundation
import GRDB
import MediaDecoding
import Testing
import TestSupport
@testable import QuarantineStore
import Locking

/// The vault and the audit database, on real files in fresh temporary folders.
@Suite("Vault", .ownThread)
struct VaultTests {
    /// A home with Downloads, and a vault in `vaultParent` (another filesystem when it is /dev/shm).
    struct Place {
        let home: URL
        let vault: Vault
        var downloads: URL { home.appendingPathComponent("Downloads") }

        init(vaultParent: String? = nil) throws {
            home = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-vault-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: home.appendingPathComponent("Downloads"), withIntermediateDirectories: true)
            let base = vaultParent.map { URL(fileURLWithPath: $0).appendingPathComponent("quarantine-\(UUID().uuidString)") } ?? home.appendingPathComponent("data")
            try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
            vault = try Vault(root: base.appendingPathComponent("vault").path, store: AuditStore(path: base.appendingPathComponent("audit.sqlite3").path))
        }

        func cleanUp() {
            try? FileManager.default.removeItem(at: home)
            try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: vault.root).deletingLastPathComponent().path)
        }

        /// A file with mode 0640, an old modification time and browser-style extended attributes.
        func download(_ name: String, bytes: Int = 200_000) throws -> (URL, String) {
            let url = downloads.appendingPathComponent(name)
            var data = Data(count: bytes)
            // Through a raw pointer: Data's subscript, unoptimised in a debug build, made the
            // 3 MB files of crashAtEveryStep cost about 0.1 s of CPU each (issue 27's suite time).
            data.withUnsafeMutableBytes { raw in
                let out = raw.bindMemory(to: UInt8.self)
                for i in 0..<bytes { out[i] = UInt8(truncatingIfNeeded: i &* 31 &+ 7) }
            }
            try data.write(to: url)
            chmod(url.path, 0o640)
            var times = [timespec(tv_sec: 1_600_000_000, tv_nsec: 123_456_789), timespec(tv_sec: 1_500_000_000, tv_nsec: 987_654_321)]
            utimensat(AT_FDCWD, url.path, &times, 0)
            let fd = open(url.path, O_RDONLY)
            _ = "https://example.invalid/picture".withCString { qsys_fsetxattr(fd, "user.xdg.origin.url", $0, strlen($0)) }
            _ = "https://example.invalid/".withCString { qsys_fsetxattr(fd, "user.xdg.referrer.url", $0, strlen($0)) }
            close(fd)
            return (url, try Vault.sha256(path: url.path))
        }
    }

    static func stat(_ path: String) -> stat {
        var info = Glibc.stat()
        lstat(path, &info)
        return info
    }

    static func xattr(_ path: String, _ name: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 512)
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        let n = qsys_fgetxattr(fd, name, &buffer, buffer.count)
        return n >= 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
    }

    @Test("the history and the items a page at a time: older than an id, at most a limit, newest first (events for one item or all); events read as Decodable reads them")
    func historyPages() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let store = place.vault.store
        let (url, _) = try place.download("asked.jpg", bytes: 1000)
        let item = try #require(try place.vault.quarantine(path: url.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .adult, actor: "test",
                                                           preview: RGBImage(width: 8, height: 8, filledWith: (1, 2, 3))).id)
        for index in 0..<30 {
            try store.record(index % 3 == 0 ? .releaseRequested : .error, itemId: index % 2 == 0 ? item : nil, path: index % 4 == 0 ? "/p/\(index)" : nil,
                             mode: index % 5 == 0 ? .child : .adult, actor: "a\(index)", detail: index % 6 == 0 ? nil : "d\(index)")
        }
        let all = try store.events()
        #expect(all.count == 31 && all.map(\.id) == all.map(\.id).sorted { ($0 ?? 0) > ($1 ?? 0) })
        let pivot = try #require(all[10].id)
        #expect(try store.events(before: pivot, limit: 5).map(\.id) == all[11..<16].map(\.id))
        #expect(try store.events(before: pivot).map(\.id) == all[11...].map(\.id))
        #expect(try store.events(limit: 3).map(\.id) == all[..<3].map(\.id))
        #expect(try store.events(before: all.last?.id, limit: 5).isEmpty)
        let ones = all.filter { $0.itemId == item }
        #expect(try store.events(itemId: item, before: ones[2].id, limit: 4).map(\.id) == ones[3..<7].map(\.id))
        // Items the same way (the list's pages).
        let more = try (1...3).map { index in
            let (url, _) = try place.download("more-\(index).jpg", bytes: 1000 + index)
            return try #require(try place.vault.quarantine(path: url.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .adult, actor: "test",
                                                           preview: nil).id)
        }
        #expect(try store.items().compactMap(\.id) == more.reversed() + [item])
        #expect(try store.items(before: more[2], limit: 2).compactMap(\.id) == [more[1], more[0]])
        #expect(try store.items(before: more[0]).compactMap(\.id) == [item])
        #expect(try store.items(limit: 1).compactMap(\.id) == [more[2]])
        // The row decoder (AuditEvent.init(row:)) reads every column as GRDB's Decodable path did.
        struct Decoded: Decodable, FetchableRecord {
            var id: Int64?, itemId: Int64?, at: Date, kind: EventKind, mode: String, actor: String, path: String?, detail: String?
        }
        let decoded = try DatabaseQueue(path: store.path).read { db in try Decoded.fetchAll(db, sql: "SELECT * FROM event ORDER BY id DESC") }
        let events = try store.events()
        #expect(decoded.count == events.count && events.count == 34)
        for (row, event) in zip(decoded, events) {
            #expect(row.id == event.id && row.itemId == event.itemId && row.at == event.at && row.kind == event.kind && row.mode == event.mode.rawValue
                    && row.actor == event.actor && row.path == event.path && row.detail == event.detail, "\(row) vs \(event)")
        }
    }

    @Test("quarantine then release: bytes, mode, times and xattrs come back; the hash is allowed", arguments: [nil, "/dev/shm"])
    func roundTrip(vaultParent: String?) throws {
        let place = try Place(vaultParent: vaultParent)
        defer { place.cleanUp() }
        let (url, digest) = try place.download("beach.jpg")
        let preview = RGBImage(width: 64, height: 48, filledWith: (200, 150, 120))
        let item = try place.vault.quarantine(path: url.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .adult, actor: "test", preview: preview)
        #expect(!FileManager.default.fileExists(atPath: url.path), "the original is out of sight")
        let stored = place.vault.itemPath(try #require(item.vaultName))
        #expect(Self.stat(stored).st_mode & 0o777 == 0o600)
        #expect(Self.stat(place.vault.folder(item.vaultName!)).st_mode & 0o777 == 0o700)
        #expect(try Vault.sha256(path: stored) == digest)
        #expect(item.originURL == "https://example.invalid/picture")
        #expect(item.referrerURL == "https://example.invalid/")
        #expect(FileManager.default.fileExists(atPath: place.vault.folder(item.vaultName!) + "/preview.jpg"))
        let meta = try String(contentsOfFile: place.vault.folder(item.vaultName!) + "/meta.json", encoding: .utf8)
        #expect(meta.contains(url.path) && meta.contains(digest) && meta.contains("https://example.invalid/picture"))
        #expect(Self.stat(place.vault.folder(item.vaultName!) + "/meta.json").st_mode & 0o777 == 0o600)
        #expect(try place.vault.store.items().map(\.id) == [item.id])

        let release = try place.vault.release(id: item.id!, mode: .adult, actor: "test")
        #expect(release.path == url.path && !release.renamed)
        #expect(try Vault.sha256(path: url.path) == digest)
        let info = Self.stat(url.path)
        #expect(info.st_mode & 0o777 == 0o640)
        #expect(info.st_mtim.tv_sec == 1_500_000_000 && info.st_mtim.tv_nsec == 987_654_321)
        #expect(Self.xattr(url.path, "user.xdg.origin.url") == "https://example.invalid/picture")
        #expect(try place.vault.store.isAllowed(sha256: digest))
        #expect(try place.vault.store.item(item.id!)?.status == .released)
        #expect(try place.vault.store.items().isEmpty)
        #expect(Set(try place.vault.store.events(itemId: item.id).map(\.kind.rawValue)) == ["quarantined", "released"])
        #expect(!FileManager.default.fileExists(atPath: place.vault.folder(item.vaultName!)))
    }

    @Test("release never overwrites: a taken name becomes 'name (1).ext', then 'name (2).ext'")
    func conflicts() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let (url, digest) = try place.download("photo.jpg")
        let first = try place.vault.quarantine(path: url.path, expected: nil, reasons: [], mode: .adult, actor: "test")
        try Data("a new file with the same name".utf8).write(to: url)
        let (second, _) = try place.download("photo (1).jpg")
        let other = try place.vault.quarantine(path: second.path, expected: nil, reasons: [], mode: .adult, actor: "test")
        try Data("taken too".utf8).write(to: second)
        let release = try place.vault.release(id: first.id!, mode: .adult, actor: "test")
        #expect(release.renamed)
        #expect(release.path == place.downloads.appendingPathComponent("photo (2).jpg").path)
        #expect(try String(contentsOf: url, encoding: .utf8) == "a new file with the same name")
        #expect(try String(contentsOf: second, encoding: .utf8) == "taken too")
        #expect(try Vault.sha256(path: release.path) == digest)
        #expect(try place.vault.store.events(itemId: first.id).first?.detail?.contains("new name") == true)
        _ = other
    }

    @Test("a missing folder is recreated; --to puts the file elsewhere")
    func missingFolder() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let nested = place.downloads.appendingPathComponent("trip/day1")
        try FileManager.default.createDirectory(at: nested, withIntermediateDirectories: true)
        let url = nested.appendingPathComponent("a.png")
        try Data(repeating: 7, count: 5000).write(to: url)
        let item = try place.vault.quarantine(path: url.path, expected: nil, reasons: [], mode: .adult, actor: "test")
        try FileManager.default.removeItem(at: place.downloads.appendingPathComponent("trip"))
        let release = try place.vault.release(id: item.id!, mode: .adult, actor: "test")
        #expect(release.path == url.path && FileManager.default.fileExists(atPath: url.path))
        let (other, _) = try place.download("b.png")
        let second = try place.vault.quarantine(path: other.path, expected: nil, reasons: [], mode: .adult, actor: "test")
        let elsewhere = place.home.appendingPathComponent("Restored")
        let moved = try place.vault.release(id: second.id!, to: elsewhere.path, mode: .adult, actor: "test")
        #expect(moved.path == elsewhere.appendingPathComponent("b.png").path)
    }

    @Test("a file that changed after analysis is left where it is")
    func changedAfterAnalysis() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let (url, _) = try place.download("x.jpg")
        let file = try MediaFile(path: url.path)
        let analysed = file.identity
        try Data("replaced".utf8).write(to: url)
        #expect(throws: VaultError.self) {
            try place.vault.quarantine(path: url.path, expected: analysed, reasons: [], mode: .adult, actor: "test")
        }
        #expect(FileManager.default.fileExists(atPath: url.path))
        #expect(try place.vault.store.items(includeClosed: true).isEmpty)
        #expect(try place.vault.store.events().first?.kind == .error)
    }

    @Test("symbolic links are not quarantined")
    func symlinkRefused() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let (url, _) = try place.download("real.jpg")
        let link = place.downloads.appendingPathComponent("link.jpg")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: url)
        #expect(throws: VaultError.self) { try place.vault.quarantine(path: link.path, expected: nil, reasons: [], mode: .adult, actor: "test") }
        #expect(FileManager.default.fileExists(atPath: url.path))
    }

    // MARK: - Recovery from each interrupted state

    /// Writes an item and a journal entry as a crash would have left them.
    func interrupted(_ place: Place, operation: String, state: String, source: String, destination: String, sha256: String, status: String) throws -> Int64 {
        try place.vault.store.write { db -> Int64 in
            var item = VaultItem(id: nil, createdAt: Date(), originalPath: operation == "quarantine" ? source : destination, vaultName: nil,
                                 previewName: nil, size: 0, sha256: sha256, mode: 0o100644, uid: getuid(), gid: getgid(), accessNanoseconds: 0,
                                 modificationNanoseconds: 1_000_000_000, extendedAttributes: Data("{}".utf8), originURL: nil, referrerURL: nil,
                                 reasons: "[]", analysisMode: .adult, status: VaultItem.Status(rawValue: status)!)
            try item.insert(db)
            item.vaultName = "\(item.id!)"
            try item.update(db)
            var entry = JournalEntry(id: nil, itemId: item.id!, operation: .init(rawValue: operation)!, source: source, destination: destination, state: .init(rawValue: state)!, startedAt: Date())
            try entry.insert(db)
            return item.id!
        }
    }

    @Test("crash before the move: rolled back, the file stays where it was")
    func recoverBeforeMove() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let (url, digest) = try place.download("a.jpg")
        let id = try interrupted(place, operation: "quarantine", state: "begun", source: url.path, destination: place.vault.itemPath("99"), sha256: digest, status: "quarantining")
        let lines = try place.vault.recover()
        #expect(lines.count == 1 && lines[0].contains("rolled back"))
        #expect(try Vault.sha256(path: url.path) == digest)
        #expect(try place.vault.store.item(id) == nil)
    }

    @Test("crash after a cross-filesystem copy, before the unlink: finished, one copy left")
    func recoverAfterCopy() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let (url, digest) = try place.download("a.jpg")
        try FileManager.default.createDirectory(atPath: place.vault.folder("7"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: url.path, toPath: place.vault.itemPath("7"))
        let id = try interrupted(place, operation: "quarantine", state: "copied", source: url.path, destination: place.vault.itemPath("7"), sha256: digest, status: "quarantining")
        #expect(try place.vault.recover().first?.contains("finished") == true)
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(try Vault.sha256(path: place.vault.itemPath("7")) == digest)
        #expect(try place.vault.store.item(id)?.status == .quarantined)
    }

    @Test("crash after a copy that does not match: the copy is discarded, the original kept")
    func recoverBadCopy() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let (url, digest) = try place.download("a.jpg")
        try FileManager.default.createDirectory(atPath: place.vault.folder("8"), withIntermediateDirectories: true)
        try Data("half a copy".utf8).write(to: URL(fileURLWithPath: place.vault.itemPath("8")))
        _ = try interrupted(place, operation: "quarantine", state: "copied", source: url.path, destination: place.vault.itemPath("8"), sha256: digest, status: "quarantining")
        #expect(try place.vault.recover().first?.contains("rolled back") == true)
        #expect(try Vault.sha256(path: url.path) == digest)
        #expect(!FileManager.default.fileExists(atPath: place.vault.itemPath("8")))
    }

    @Test("crash in a release after the rename: finished and recorded as released")
    func recoverRelease() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let (url, digest) = try place.download("a.jpg")
        let id = try interrupted(place, operation: "release", state: "begun", source: place.vault.itemPath("5"), destination: url.path, sha256: digest, status: "releasing")
        #expect(try place.vault.recover().first?.contains("finished") == true)
        #expect(try place.vault.store.item(id)?.status == .released)
        #expect(FileManager.default.fileExists(atPath: url.path))
    }

    @Test("the database is shared safely: a second connection sees the first one's writes")
    func sharedDatabase() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let (url, _) = try place.download("a.jpg")
        let item = try place.vault.quarantine(path: url.path, expected: nil, reasons: ["open_nsfw 0.91"], mode: .child, actor: "agent")
        let other = try AuditStore(path: place.vault.store.path)
        #expect(try other.item(item.id!)?.reasonList == ["open_nsfw 0.91"])
        #expect(try other.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") } == "wal")
    }

    @Test("block deletes the file, lists its hash with the reason, and --origin blocks the site; --keep seals instead")
    func block() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let (url, digest) = try place.download("a.jpg")
        let item = try place.vault.quarantine(path: url.path, expected: nil, reasons: ["open_nsfw 0.93"], mode: .adult, actor: "test")
        let result = try place.vault.block(id: item.id!, keep: false, origin: true, mode: .adult, actor: "test")
        #expect(result.deleted && result.blockedHost == "example.invalid")
        #expect(!FileManager.default.fileExists(atPath: place.vault.folder(item.vaultName!)))
        #expect(try place.vault.store.blockReason(sha256: digest)?.contains("open_nsfw 0.93") == true)
        #expect(try place.vault.store.isBlocked(host: "EXAMPLE.invalid"))
        #expect(try place.vault.store.item(item.id!)?.status == .blocked)
        #expect(Set(try place.vault.store.events(itemId: item.id).map(\.kind.rawValue)) == ["quarantined", "blocked", "deleted"])
        #expect(throws: VaultError.self) { try place.vault.release(id: item.id!, mode: .adult, actor: "test") }

        let (other, _) = try place.download("b.jpg")
        let kept = try place.vault.quarantine(path: other.path, expected: nil, reasons: [], mode: .adult, actor: "test")
        #expect(try !place.vault.block(id: kept.id!, keep: true, origin: false, mode: .adult, actor: "test").deleted)
        #expect(FileManager.default.fileExists(atPath: place.vault.itemPath(kept.vaultName!)))
        #expect(try place.vault.store.item(kept.id!)?.status == .sealed)
    }

    @Test("the blurred preview keeps nothing finer than its 6 pixels")
    func previewIsBlurred() throws {
        var pixels = [UInt8]()
        for y in 0..<480 { for x in 0..<640 { let v: UInt8 = (x / 4 + y / 4) % 2 == 0 ? 255 : 0; pixels += [v, v, v] } }
        let preview = BlurredPreview.image(from: RGBImage(width: 640, height: 480, pixels: pixels))
        #expect(max(preview.width, preview.height) == 256)
        // A 4-pixel checkerboard has nothing left: every pixel is mid-grey.
        #expect(preview.pixels.allSatisfy { $0 > 100 && $0 < 156 })
    }

    // MARK: - Ownership of recovery, descriptors

    @Test("recovery is the vault holder's: a second process opening the vault leaves an agent's move alone")
    func recoveryBelongsToTheHolder() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let (url, digest) = try place.download("a.jpg")
        // The agent holds the vault; one of its cross-filesystem moves is half done.
        var claim: Vault.Claim? = try place.vault.claim(waitingUpTo: 1)
        #expect(claim?.recovered == [])
        try FileManager.default.createDirectory(atPath: place.vault.folder("9"), withIntermediateDirectories: true)
        try Data("half a copy".utf8).write(to: URL(fileURLWithPath: place.vault.itemPath("9") + ".part"))
        _ = try interrupted(place, operation: "quarantine", state: "begun", source: url.path, destination: place.vault.itemPath("9"), sha256: digest, status: "quarantining")
        // 'quarantine status' opens the vault meanwhile (another Vault on the same folders).
        let other = try Vault(root: place.vault.root, store: AuditStore(path: place.vault.store.path))
        #expect(try other.recoverIfIdle() == nil, "someone else's move must not be recovered")
        #expect(FileManager.default.fileExists(atPath: place.vault.itemPath("9") + ".part"), "the agent's partial copy was unlinked")
        // A second agent cannot claim it either.
        #expect(throws: VaultError.self) { _ = try other.claim(waitingUpTo: 0.2) }
        // Once the holder is gone (it crashed), the next one recovers.
        claim = nil
        let lines = try #require(try Self.recoverWhenIdle(other))
        #expect(lines.count == 1 && lines[0].contains("rolled back"))
        #expect(!FileManager.default.fileExists(atPath: place.vault.itemPath("9") + ".part"))
        #expect(try Vault.sha256(path: url.path) == digest)
    }

    @Test("a move under way holds off recovery; a claim waits for it")
    func moveHoldsOffRecovery() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let recovered: [String]?? = try place.vault.whileMoving {
            let other = try Vault(root: place.vault.root, store: AuditStore(path: place.vault.store.path))
            return try other.recoverIfIdle()
        }
        #expect(recovered == .some(nil))
        #expect(try Self.recoverWhenIdle(place.vault) == [])
    }

    @Test("a copy that fails its check closes each descriptor once and leaks none")
    func copyDescriptors() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let (url, _) = try place.download("a.jpg", bytes: 4096)
        let input = open(url.path, O_RDONLY | O_CLOEXEC)
        defer { close(input) }
        /// Descriptors of this process open on `path` (other tests run beside this one, so a
        /// count of all descriptors would not do).
        func descriptors(on path: String) -> Int {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            return names.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == path }.count
        }
        // Another thread opens, uses and closes files all the while: a descriptor closed twice
        // by the copy would close one of its files under it (EBADF).
        let stop = Locked(false)
        let badDescriptors = Locked(0)
        let probe = Thread {
            while !stop.withLock({ $0 }) {
                let fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { continue }
                var byte: UInt8 = 0
                for _ in 0..<20 where read(fd, &byte, 1) < 0 && errno == EBADF { badDescriptors.withLock { $0 += 1 } }
                if close(fd) != 0 && errno == EBADF { badDescriptors.withLock { $0 += 1 } }
            }
        }
        probe.start()
        var leaked = 0
        // 500 failing copies (2,000 until issue 27's suite time: the probe spins a core for as
        // long as the loop runs, about 5 s of CPU in all). With a second close(check) put back
        // in writeVerifiedCopy, 500 copies had the probe see 89 to 288 of its descriptors closed
        // under it (3 runs of 3 failed).
        for index in 0..<500 {
            let partial = place.home.appendingPathComponent("copy-\(index).part").path
            #expect(throws: VaultError.self) {
                try Vault.writeVerifiedCopy(of: input, to: partial, sha256: String(repeating: "0", count: 64), describing: url.path)
            }
            if index < 50 { leaked += descriptors(on: partial) }
            unlink(partial)
        }
        stop.withLock { $0 = true }
        Thread.sleep(forTimeInterval: 0.05)
        #expect(badDescriptors.withLock { $0 } == 0, "a descriptor of another thread was closed under it")
        #expect(leaked == 0, "descriptors left open on the partial copy: \(leaked)")
        // The partial file cannot be created: a clear error, nothing opened.
        #expect(throws: VaultError.self) {
            try Vault.writeVerifiedCopy(of: input, to: "/nonexistent-folder/x.part", sha256: "", describing: url.path)
        }
    }

    // MARK: - A crash at every step of a move

    /// Recovery once the vault is free. A process spawned by a test running beside this one holds
    /// a copy of every descriptor between its fork and its exec, locks included, for an instant.
    static func recoverWhenIdle(_ vault: Vault) throws -> [String]? {
        for _ in 0..<100 {
            if let lines = try vault.recoverIfIdle() { return lines }
            usleep(20_000)
        }
        return nil
    }

    /// Every regular file under `roots` whose bytes hash to `digest`.
    static func copies(of digest: String, under roots: [String]) -> [String] {
        var found: [String] = []
        for root in roots {
            guard let walker = FileManager.default.enumerator(atPath: root) else { continue }
            for case let name as String in walker {
                let path = root + "/" + name
                var info = Glibc.stat()
                guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
                if (try? Vault.sha256(path: path)) == digest { found.append(path) }
            }
        }
        return found
    }

    @Test("killed at any step of a move in or out, on one filesystem or across: after recovery the file is in exactly one place, intact, and the database agrees",
          arguments: [nil, "/dev/shm"])
    func crashAtEveryStep(vaultParent: String?) throws {
        for operation in ["quarantine", "release"] {
            for step in Vault.MoveStep.allCases {
                let place = try Place(vaultParent: vaultParent)
                defer { place.cleanUp() }
                let (url, digest) = try place.download("a.jpg", bytes: 3_000_000)
                let armed = Locked(true)
                let crashing = try Vault(root: place.vault.root, store: place.vault.store) { reached in
                    if reached == step, armed.withLock({ $0 }) { throw Vault.SimulatedCrash() }
                }
                var crashed = false
                do {
                    if operation == "quarantine" {
                        _ = try crashing.quarantine(path: url.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .adult, actor: "test")
                    } else {
                        let item = try place.vault.quarantine(path: url.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .adult, actor: "test")
                        _ = try crashing.release(id: item.id!, mode: .adult, actor: "test")
                    }
                } catch is Vault.SimulatedCrash {
                    crashed = true
                }
                let context = "\(operation) killed at \(step.rawValue) (\(vaultParent ?? "one filesystem")), crash reached: \(crashed)"
                // One filesystem: a rename, so only these steps exist.
                #expect(crashed == (vaultParent != nil || step == .journaled || step == .inPlace), "\(context)")
                // The next holder of the vault recovers (a new process: a new Vault and connection).
                let next = try Vault(root: place.vault.root, store: AuditStore(path: place.vault.store.path))
                let lines = try #require(try Self.recoverWhenIdle(next), "\(context): the dead mover still holds the vault")
                #expect(lines.count == (crashed ? 1 : 0), "\(context): \(lines)")
                let places = Self.copies(of: digest, under: [place.downloads.path, place.vault.root])
                #expect(places.count == 1, "\(context): the file is in \(places.count) places: \(places)")
                let leftovers = (FileManager.default.enumerator(atPath: place.vault.root)?.allObjects as? [String] ?? []) + (try FileManager.default.contentsOfDirectory(atPath: place.downloads.path))
                #expect(!leftovers.contains { $0.hasSuffix(".part") }, "\(context): partial copies left: \(leftovers)")
                let inVault = places.first?.hasPrefix(place.vault.root) == true
                let all = try next.store.items(includeClosed: true)
                if operation == "quarantine" {
                    #expect(all.map(\.status) == (inVault ? [.quarantined] : []), "\(context): \(all.map(\.status))")
                } else {
                    #expect(all.map(\.status) == [inVault ? .quarantined : .released], "\(context): \(all.map(\.status))")
                    #expect(try next.store.isAllowed(sha256: digest) == !inVault, "\(context): released bytes are allowed, and only they")
                }
                #expect(try next.store.unfinishedMoves().isEmpty, "\(context): the journal still has open moves")
            }
        }
    }

    // MARK: - Hard links

    @Test("a file with another name (hard link) is copied into the vault: the vault's inode is its own, the other name keeps its bytes and mode")
    func hardLinkedFileIsCopied() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let (url, digest) = try place.download("a.jpg")
        let other = place.downloads.appendingPathComponent("b.jpg")
        #expect(link(url.path, other.path) == 0)
        let item = try place.vault.quarantine(path: url.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .adult, actor: "test")
        var vaultInfo = Glibc.stat(), otherInfo = Glibc.stat()
        #expect(lstat(place.vault.itemPath(item.vaultName!), &vaultInfo) == 0 && lstat(other.path, &otherInfo) == 0)
        #expect(vaultInfo.st_ino != otherInfo.st_ino, "the vault shares its inode with the outside name")
        #expect(otherInfo.st_nlink == 1 && otherInfo.st_mode & 0o777 == 0o640, "the vault's chmod reached the other name")
        #expect(try Vault.sha256(path: other.path) == digest)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("a copy that cannot fit on the vault's filesystem is refused before a byte is written (a sparse file once filled the disk at each retry)")
    func copyThatCannotFitIsRefused() throws {
        let small = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-small-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        defer { umount2(small.path, Int32(MNT_DETACH)); try? FileManager.default.removeItem(at: small) }
        try #require(mount("tmpfs", small.path, "tmpfs", 0, "size=8m") == 0, "mount: \(errno)")
        let place = try Place(vaultParent: small.path)
        defer { place.cleanUp() }
        let (url, _) = try place.download("huge.mp4", bytes: 4096)
        #expect(truncate(url.path, 64 << 20) == 0, "a sparse 64 MiB file, 8 times the vault's filesystem")
        do {
            _ = try place.vault.quarantine(path: url.path, expected: nil, reasons: ["unverified"], mode: .child, actor: "test")
            Issue.record("a copy that cannot fit was accepted")
        } catch {
            #expect("\(error)".contains("does not fit in the vault"), "\(error)")
        }
        var info = statvfs()
        #expect(statvfs(small.path, &info) == 0)
        let used = (Int(info.f_blocks) - Int(info.f_bfree)) * Int(info.f_frsize)
        #expect(used < 2 << 20, "nothing was copied (the database alone is in use): \(used) bytes used")
        #expect(FileManager.default.fileExists(atPath: url.path), "the original stays where it is")
    }

    @Test("a release checks the vault copy's sha256: changed bytes stay in the vault")
    func releaseChecksTheHash() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let (url, _) = try place.download("a.jpg")
        let item = try place.vault.quarantine(path: url.path, expected: nil, reasons: ["x"], mode: .adult, actor: "test")
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: place.vault.itemPath(item.vaultName!)))
        try handle.write(contentsOf: Data("tampered".utf8))
        try handle.close()
        #expect(throws: VaultError.self) { try place.vault.release(id: item.id!, mode: .adult, actor: "test") }
        #expect(try place.vault.store.item(item.id!)?.status == .quarantined)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("release through a folder replaced by a symbolic link: refused, nothing written into the link's target; --to, or a link that was there before, still works")
    func releaseRefusesASwappedFolder() throws {
        let place = try Place()
        defer { place.cleanUp() }
        let sub = place.downloads.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let file = sub.appendingPathComponent("a.jpg")
        try Data(repeating: 7, count: 4096).write(to: file)
        let item = try place.vault.quarantine(path: file.path, expected: nil, reasons: ["x"], mode: .adult, actor: "test")
        // Downloads/sub becomes a link to somewhere else.
        let elsewhere = place.home.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.removeItem(at: sub)
        try FileManager.default.createSymbolicLink(at: sub, withDestinationURL: elsewhere)
        let error = #expect(throws: VaultError.self) { try place.vault.release(id: item.id!, mode: .adult, actor: "test") }
        #expect("\(error.map { "\($0)" } ?? "")".contains("symbolic link"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty, "written through the link")
        #expect(try place.vault.store.item(item.id!)?.status == .quarantined)
        // The person names a folder: it comes back there.
        let released = try place.vault.release(id: item.id!, to: place.home.appendingPathComponent("restored").path, mode: .adult, actor: "test")
        #expect(released.path.hasSuffix("/restored/a.jpg") && FileManager.default.fileExists(atPath: released.path))

        // A folder that was a link already when the file was hidden (a data disk) is followed.
        let disk = place.home.appendingPathComponent("disk")
        try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
        let linked = place.downloads.appendingPathComponent("linked")
        try FileManager.default.createSymbolicLink(at: linked, withDestinationURL: disk)
        let second = linked.appendingPathComponent("b.jpg")
        try Data(repeating: 8, count: 4096).write(to: second)
        let other = try place.vault.quarantine(path: second.path, expected: nil, reasons: ["x"], mode: .adult, actor: "test")
        let back = try place.vault.release(id: other.id!, mode: .adult, actor: "test")
        #expect(back.path == second.path && FileManager.default.fileExists(atPath: disk.appendingPathComponent("b.jpg").path))
    }
}
