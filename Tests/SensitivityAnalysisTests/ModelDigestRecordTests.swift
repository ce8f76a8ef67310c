import Foundation
import QuarantineBase
import SensitivityAnalysis
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A pinned file is hashed once per version: the record beside it vouches for it while nothing
/// about the file changed, and only a record this process's user (or root) wrote is believed.
@Suite("model digest record")
struct ModelDigestRecordTests {
    /// A folder with one "model" and the artifact that pins its bytes.
    struct Place {
        let folder: URL
        let model: URL
        let artifact: ModelCatalog.Artifact
        var catalog: ModelCatalog { ModelCatalog(runtimeDirectories: [], modelDirectories: [folder.path]) }
        var record: String { folder.path + "/" + ModelDigestRecord.fileName }

        init(bytes: [UInt8] = Array(repeating: 7, count: 100_000)) throws {
            folder = try TestEnvironment.temporaryDirectory()
            model = folder.appendingPathComponent("pinned.onnx")
            try Data(bytes).write(to: model)
            artifact = ModelCatalog.Artifact(name: "test model", fileName: "pinned.onnx", sha256: try ModelCatalog.sha256(ofFileAt: model.path),
                                             wheel: "-", member: "-", platform: nil, licence: "-", isRuntime: false)
        }

        func verify() throws(InferenceError) -> Bool { try catalog.verification(of: artifact).hashed }
        func remove() { try? FileManager.default.removeItem(at: folder) }
    }

    static func refused(_ place: Place) -> Bool {
        do { _ = try place.verify(); return false } catch { return error.code == .modelMismatch }
    }

    @Test("an unchanged model is hashed once; then its record vouches for it")
    func hashedOnce() throws {
        let place = try Place()
        defer { place.remove() }
        #expect(try place.verify() == true)
        #expect(try place.verify() == false)
        #expect(try place.verify() == false)
        var info = stat()
        #expect(lstat(place.record, &info) == 0)
        #expect(info.st_uid == geteuid() && info.st_mode & 0o777 == 0o644)
        // The explicit check (doctor) hashes whatever the record says.
        #expect(try place.catalog.verification(of: place.artifact, trustingRecord: false).hashed == true)
    }

    @Test("the check before a worker's start: a missing or changed file is said where records are kept; in a folder where none is (others may write it) the file is only looked for, its hashing left to the worker")
    func checkBeforeWorker() throws {
        let place = try Place()
        defer { place.remove() }
        try place.catalog.checkBeforeWorker([place.artifact])
        try Data(Array(repeating: 8, count: 100_000)).write(to: place.model)
        #expect { try place.catalog.checkBeforeWorker([place.artifact]) } throws: { ($0 as? InferenceError)?.code == .modelMismatch }
        // A folder this process keeps no record in: the changed file is not hashed here.
        #expect(chmod(place.folder.path, 0o777) == 0)
        try place.catalog.checkBeforeWorker([place.artifact])
        try FileManager.default.removeItem(at: place.model)
        #expect { try place.catalog.checkBeforeWorker([place.artifact]) } throws: { ($0 as? InferenceError)?.code == .modelMissing }
    }

    @Test("a model rewritten in place with the same size and its modification time put back is hashed again and refused")
    func rewrittenInPlace() throws {
        let place = try Place()
        defer { place.remove() }
        #expect(try place.verify() == true)
        var before = stat()
        #expect(stat(place.model.path, &before) == 0)
        let fd = open(place.model.path, O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0)
        let other = [UInt8](repeating: 9, count: 4096)
        #expect(other.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 1000) } == 4096)
        var times = [before.st_atim, before.st_mtim]
        #expect(futimens(fd, &times) == 0)
        close(fd)
        var after = stat()
        #expect(stat(place.model.path, &after) == 0)
        #expect(after.st_size == before.st_size && after.st_ino == before.st_ino)
        #expect(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)
        #expect(Self.refused(place), "a rewritten model passed on its old record")
    }

    @Test("a model renamed over or touched is hashed again")
    func renamedOrTouched() throws {
        let place = try Place()
        defer { place.remove() }
        #expect(try place.verify() == true)
        // The same bytes under a new inode: hashed again (and accepted).
        let copy = place.folder.appendingPathComponent("copy")
        try FileManager.default.copyItem(at: place.model, to: copy)
        #expect(rename(copy.path, place.model.path) == 0)
        #expect(try place.verify() == true)
        #expect(try place.verify() == false)
        // Touched: hashed again.
        #expect(utimensat(AT_FDCWD, place.model.path, nil, 0) == 0)
        #expect(try place.verify() == true)
        // Other bytes renamed over: refused.
        let bad = place.folder.appendingPathComponent("bad")
        try Data(repeating: 1, count: 100_000).write(to: bad)
        #expect(rename(bad.path, place.model.path) == 0)
        #expect(Self.refused(place))
    }

    /// Writes a record that vouches for the model as it is now (whatever its bytes).
    static func forgeRecord(_ place: Place) throws {
        var info = stat()
        #expect(stat(place.model.path, &info) == 0)
        let identity = ModelDigestRecord.Identity(info)
        let line = ["pinned.onnx", place.artifact.sha256, "\(identity.device)", "\(identity.inode)", "\(identity.size)",
                    "\(identity.modified.tv_sec)", "\(identity.modified.tv_nsec)", "\(identity.changed.tv_sec)", "\(identity.changed.tv_nsec)"].joined(separator: " ")
        unlink(place.record)
        try Data((line + "\n").utf8).write(to: URL(fileURLWithPath: place.record))
        chmod(place.record, 0o644)
    }

    @Test("a record that another account could have written is not believed: a swapped model is refused")
    func foreignRecordIgnored() throws {
        let place = try Place()
        defer { place.remove() }
        // The model swapped for other bytes, and a record forged to vouch for the swapped file.
        try Data(repeating: 1, count: 100_000).write(to: place.model)
        try Self.forgeRecord(place)
        // Sanity: written by this process's own user, such a record is believed (what it is for).
        #expect(try place.verify() == false)

        // Writable by the group or by others: anyone could have put the line there.
        try Self.forgeRecord(place)
        chmod(place.record, 0o664)
        #expect(Self.refused(place))
        try Self.forgeRecord(place)
        chmod(place.record, 0o646)
        #expect(Self.refused(place))

        // A symbolic link to a record elsewhere.
        try Self.forgeRecord(place)
        let elsewhere = place.folder.appendingPathComponent("elsewhere")
        #expect(rename(place.record, elsewhere.path) == 0)
        #expect(symlink(elsewhere.path, place.record) == 0)
        #expect(Self.refused(place))
        unlink(place.record)

        // Owned by another account (the child's, beside its guardian's service): not believed.
        if geteuid() == 0 {
            try Self.forgeRecord(place)
            #expect(chown(place.record, 65534, 65534) == 0)
            #expect(Self.refused(place))
        }
    }

    @Test("before a worker starts, its parent's recordDigests leaves records the worker then believes: nothing is hashed twice")
    func parentRecordsForTheWorker() throws {
        let installed = ModelCatalog.standard()
        let folder = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        for sub in ["lib", "models"] { try FileManager.default.createDirectory(at: folder.appendingPathComponent(sub), withIntermediateDirectories: true) }
        // The installed files, by symbolic link (their identity is the target's; the records are this folder's).
        for artifact in ModelCatalog.all {
            let target = try #require(installed.locate(artifact))
            #expect(symlink(target, folder.path + (artifact.isRuntime ? "/lib/" : "/models/") + artifact.fileName) == 0)
        }
        let catalog = ModelCatalog(dataFolder: folder.path)
        catalog.recordDigests()
        for artifact in ModelCatalog.all {
            #expect(try catalog.verification(of: artifact).hashed == false, "\(artifact.fileName) hashed again after the parent's check")
        }
    }

    @Test("no record is written into a folder another account owns or others can write: the file is hashed at each check")
    func foreignFolderKeepsNoRecord() throws {
        let place = try Place()
        defer { place.remove() }
        chmod(place.folder.path, 0o777)
        #expect(try place.verify() == true)
        #expect(try place.verify() == true)
        #expect(access(place.record, F_OK) != 0)
        if geteuid() == 0 {
            chmod(place.folder.path, 0o755)
            #expect(chown(place.folder.path, 65534, 65534) == 0)
            #expect(try place.verify() == true)
            #expect(try place.verify() == true)
            #expect(access(place.record, F_OK) != 0)
        }
    }

    @Test("a record another account writes in a folder it can write is not believed by root", .enabled(if: geteuid() == 0))
    func childWrittenRecord() async throws {
        let place = try Place()
        defer { place.remove() }
        chmod(place.folder.path, 0o777)
        try Data(repeating: 1, count: 100_000).write(to: place.model)
        var info = stat()
        #expect(stat(place.model.path, &info) == 0)
        let identity = ModelDigestRecord.Identity(info)
        let line = ["pinned.onnx", place.artifact.sha256] + [identity.device, identity.inode].map { "\($0)" }
            + ["\(identity.size)", "\(identity.modified.tv_sec)", "\(identity.modified.tv_nsec)", "\(identity.changed.tv_sec)", "\(identity.changed.tv_nsec)"]
        // Written by nobody itself, as a child's process would.
        let script = "umask 022; printf '%s\\n' \"$1\" > \"$2\""
        let arguments = ["-u", "nobody", "--", "/bin/sh", "-c", script, "sh", line.joined(separator: " "), place.record]
        let result = try await offPool { try Spawned.run("/usr/sbin/runuser", arguments, environment: ["PATH": "/usr/bin:/bin"], timeout: 20) }
        #expect(result.status == 0, "\(String(decoding: result.stderr, as: UTF8.self))")
        var record = stat()
        #expect(lstat(place.record, &record) == 0 && record.st_uid == 65534)
        #expect(Self.refused(place))
    }
}
