import Foundation
@testable import AccountPipeline
import TestSupport
import Testing

/// The protected account's runtime folder (`/run/user/<uid>`, its `XDG_RUNTIME_DIR`): its own and
/// writable, mounted by logind at its login. The guardian service watches it while it is mounted,
/// for the account's own files (issue 26). A real tmpfs at the real path, as logind makes it (root).
@Suite("Guardian: the account's runtime folder", .enabled(if: getuid() == 0, "mounting needs root"))
struct RuntimeFolderTests {
    /// A small PNG (8x8, red): a picture to hold, whatever a model would say of it.
    static let png = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC")!

    /// A uid no account has, with no runtime folder yet.
    static func freeUID() -> uid_t? {
        (42_470..<42_490).map { uid_t($0) }.first { getpwuid($0) == nil && !FileManager.default.fileExists(atPath: "/run/user/\($0)") }
    }

    /// `name` in `folder`, written as `uid`'s own file: made under another name, given to the
    /// account, then renamed into place (as a program of the account's would leave it).
    static func write(_ name: String, in folder: String, owner: uid_t) throws {
        let temporary = folder + "/.part-\(UUID().uuidString)"
        try #require(FileManager.default.createFile(atPath: temporary, contents: png))
        try #require(chown(temporary, owner, owner) == 0)
        try #require(rename(temporary, folder + "/" + name) == 0)
    }

    static func waitUntil(_ seconds: Double, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < end {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }

    @Test("mounted at the account's login (after the service started), its runtime folder is watched: the account's picture there is held, another owner's is left; unmounted, it is no longer watched")
    func runtimeFolderIsWatchedWhileMounted() async throws {
        // The agent's FolderWatcher needs the process's one libinotifytools instance: another
        // test's watcher running beside it made the agent end at start (EBUSY), watching nothing.
        try await FolderWatcherTurn.run { try await self.watchedWhileMounted() }
    }

    func watchedWhileMounted() async throws {
        let fixture = try GuardedAgentFixture("runtime"); defer { fixture.cleanUp() }
        let uid = fixture.uid
        // The host's /tmp, /var/tmp and /dev/shm are watched too, as the service watches them: what
        // other tests do there meanwhile must not cost the runtime folder anything. (In CI this
        // test failed while they were left in; the cause was the folder below: made by root,
        // then given to the account, it was judged closed to the account when it appeared and
        // never watched. The watcher now watches such a folder once a chown or chmod opens it.)
        let options = fixture.options(mounts: MountTable.current())
        #expect(options.runtimeFolder?.path == "/run/user/\(uid)")
        #expect(options.runtimeFolder?.reachedAt == "/run/user/\(uid)", "no unit here: reached directly")

        // Mounted after the service started, as the test's title says: under a loaded CI run the
        // agent's start took 3 s, longer than a fixed wait, and the mount landed during it.
        try await fixture.withAgent(options) { agent in
            // As logind does at the account's first login: /run/user/<uid>, a tmpfs, the account's, 0700.
            let runtime = "/run/user/\(uid)"
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
            chmod("/run/user", 0o755)
            try #require(mount("tmpfs", runtime, "tmpfs", UInt(MS_NOSUID | MS_NODEV), "size=4m,mode=0700,uid=\(uid),gid=\(uid)") == 0,
                         "mount: \(String(cString: strerror(errno)))")
            defer {
                _ = umount2(runtime, Int32(MNT_DETACH))
                rmdir(runtime)
            }
            let watched = await Self.waitUntil(5) { agent.state.withLock { $0.roots[runtime] != nil } }
            #expect(watched, "the runtime folder did not become a watched root once mounted")
            try await Task.sleep(for: .milliseconds(300))
            try Self.write("card.png", in: runtime, owner: uid)
            // A folder made by root and given to the account a moment later, as a service of the
            // session may do: seen while still root's, it is skipped, and watched once it is given.
            try FileManager.default.createDirectory(atPath: runtime + "/app", withIntermediateDirectories: true)
            try await Task.sleep(for: .milliseconds(300))
            chown(runtime + "/app", uid, uid)
            try Self.write("deeper.png", in: runtime + "/app", owner: uid)
            // A file of another owner's (root's) there: never the account's to hold.
            try Self.write("roots.png", in: runtime, owner: 0)
            let held = await Self.waitUntil(8) { !FileManager.default.fileExists(atPath: runtime + "/card.png") && !FileManager.default.fileExists(atPath: runtime + "/app/deeper.png") }
            let left = ["card.png", "app/deeper.png"].filter { FileManager.default.fileExists(atPath: runtime + "/" + $0) }
            #expect(held, "the account's pictures in its runtime folder are still there, not watched: \(left)")
            #expect(FileManager.default.fileExists(atPath: runtime + "/roots.png"), "another owner's file was moved")

            // Logged out (the last session ended): logind unmounts it; it is no longer a root.
            // (Another process's walk, or the agent's own of the folder it was watching, may keep it
            // busy for a moment: tried again for 3 s, and the holders named if it stays busy.)
            let unmounted = TestMounts.unmount(runtime)
            #expect(unmounted == nil, "the runtime folder is kept busy: \(unmounted ?? "")")
            let unwatched = await Self.waitUntil(5) { agent.state.withLock { $0.roots[runtime] == nil } }
            #expect(unwatched, "still a watched root after the unmount")
        }
    }
}
