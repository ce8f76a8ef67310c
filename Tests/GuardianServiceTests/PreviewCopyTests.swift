import Foundation
@testable import AccountPipeline
import TestSupport
import Testing

/// The blurred preview the guardian service hands the protected account (`quarantine show`
/// saves it in `/tmp/quarantine-preview-UID`): that copy is not a new picture to hold and judge
/// (issue 26: the path `show` printed was briefly gone, held at once by the service itself and
/// put back only once a lane found its bytes on the allow list).
@Suite("Guardian: the account's copy of a preview it was handed")
struct PreviewCopyTests {
    /// A fresh folder with `bytes` written to `name` in it; its path.
    static func file(_ name: String, _ bytes: Data, in folder: String) throws -> String {
        let path = folder + "/" + name
        try #require(FileManager.default.createFile(atPath: path, contents: bytes))
        return path
    }

    static func isServed(_ previews: ServedPreviews, _ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else { return false }
        return previews.isServed(path: path, device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                                 modificationNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    @Test("only the very bytes handed out count, through no link, and only while the file is the one noticed")
    func servedPreviewsMatchBytesOnly() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("served-previews-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let preview = Data((0..<5000).map { _ in UInt8.random(in: 0...255) })
        var other = preview
        other[4321] ^= 0x01
        let previews = ServedPreviews()
        let served = try Self.file("served.jpg", preview, in: folder)
        let copy = try Self.file("copy.jpg", preview, in: folder)
        #expect(!Self.isServed(previews, copy), "nothing handed out yet")

        let fd = open(served, O_RDONLY)
        try #require(fd >= 0)
        lseek(fd, 1234, SEEK_SET)
        previews.remember(fd)
        #expect(lseek(fd, 0, SEEK_CUR) == 1234, "the descriptor's offset is left as it was")
        close(fd)

        #expect(Self.isServed(previews, copy), "a copy of the bytes handed out")
        #expect(!Self.isServed(previews, try Self.file("other.jpg", other, in: folder)), "the same size, one bit changed")
        #expect(!Self.isServed(previews, try Self.file("longer.jpg", preview + Data([0]), in: folder)))
        #expect(symlink(copy, folder + "/link.jpg") == 0)
        #expect(!Self.isServed(previews, folder + "/link.jpg"), "never through a link")

        // Noticed as one file, then something else there by the time it is read: not the preview.
        var info = stat()
        #expect(lstat(copy, &info) == 0)
        let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        #expect(rename(folder + "/other.jpg", copy) == 0)
        #expect(!previews.isServed(path: copy, device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size), modificationNanoseconds: mtime))
    }

    @Test("the guardian agent holds a picture of the account's but not its copy of a preview it was handed",
          .enabled(if: getuid() == 0, "giving files to the account needs root"))
    func previewCopyIsNotHeld() async throws {
        try await FolderWatcherTurn.run { try await self.copyNotHeld() }
    }

    func copyNotHeld() async throws {
        let fixture = try GuardedAgentFixture("preview-test"); defer { fixture.cleanUp() }
        var options = fixture.options(mounts: nil)
        options.sharedFolders = []
        let previews = ServedPreviews()
        options.servedPreviews = previews
        // The preview handed out (as the server does, through the descriptor it sends).
        let preview = RuntimeFolderTests.png
        let handed = try Self.file("handed.png", preview, in: fixture.state)
        let fd = open(handed, O_RDONLY)
        try #require(fd >= 0)
        previews.remember(fd)
        close(fd)

        try await fixture.withAgent(options) { _ in
            try await Task.sleep(for: .milliseconds(300))

            // The account's copy of the preview, and a picture of its own (one byte more): both its files.
            let downloads = fixture.downloads
            try RuntimeFolderTests.write("item-7.png", in: downloads, owner: fixture.uid)
            let picture = preview + Data([0])
            let temporary = try Self.file(".part-picture", picture, in: downloads)
            chown(temporary, fixture.uid, fixture.uid)
            #expect(rename(temporary, downloads + "/picture.png") == 0)
            let held = await RuntimeFolderTests.waitUntil(8) { !FileManager.default.fileExists(atPath: downloads + "/picture.png") }
            #expect(held, "the account's own picture was not held: nothing was watched")
            try await Task.sleep(for: .seconds(1))
            #expect(FileManager.default.contents(atPath: downloads + "/item-7.png") == preview, "the copy of the preview was held")
        }
    }
}
