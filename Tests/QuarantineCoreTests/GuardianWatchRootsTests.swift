import Foundation
import Testing
@testable import AccountPipeline
@testable import QuarantineCore

/// What the guardian service watches in a protected account (issue 26: only Downloads was).
@Suite("Guardian watch roots")
struct GuardianWatchRootsTests {
    @Test("child mode: the whole home first, then the configured folders; adult mode or a person's own agent: the configured folders only")
    func protectedHomeIsWatchedWhole() throws {
        let home = "/home/sam"
        var settings = try Settings().applying(toml: "mode = \"child\"\n[watch]\nincoming = [\"/home/sam/Downloads\"]\noutgoing = [\"/home/sam/Shared\"]\n", from: "sam.toml")
        let environment = ["HOME": home]
        let roots = AccountPipeline.watchRoots(settings, environment: environment, protectedHome: home)
        #expect(roots.map(\.path) == [home, "/home/sam/Downloads", "/home/sam/Shared", "/tmp", "/var/tmp", "/dev/shm"])
        #expect(roots.map(\.direction) == [.incoming, .incoming, .outgoing, .incoming, .incoming, .incoming])
        #expect(AccountPipeline.watchRoots(settings, environment: environment).map(\.path) == ["/home/sam/Downloads", "/home/sam/Shared"])
        settings.mode = .adult
        #expect(AccountPipeline.watchRoots(settings, environment: environment, protectedHome: home).map(\.path) == ["/home/sam/Downloads"])
    }

    @Test("under the unit the host's /tmp and /var/tmp are watched at their side paths (when mounted there), removable media mounted for the account after them")
    func sharedFoldersAndMedia() throws {
        let settings = try Settings().applying(toml: "mode = \"child\"\n", from: "sam.toml")
        let table = MountTable(mountPoints: ["/", "/run/quarantine/host/tmp", "/media/sam/STICK"])
        let shared = SharedFolder.standard(mounts: table)
        #expect(shared.map(\.reachedAt) == ["/run/quarantine/host/tmp", "/var/tmp", "/dev/shm"])
        let roots = AccountPipeline.watchRoots(settings, environment: ["HOME": "/home/sam"], protectedHome: "/home/sam", shared: shared,
                                               media: table.mountPoints(below: ["/media/sam", "/run/media/sam"]))
        #expect(roots.map(\.path) == ["/home/sam", "/home/sam/Downloads", "/run/quarantine/host/tmp", "/var/tmp", "/dev/shm", "/media/sam/STICK"])
        // Named as people know them.
        #expect(SharedFolder.shown("/run/quarantine/host/tmp/a/card.png", in: shared) == "/tmp/a/card.png")
        #expect(SharedFolder.shown("/run/quarantine/host/tmp", in: shared) == "/tmp")
        #expect(SharedFolder.shown("/run/quarantine/host/tmpx/card.png", in: shared) == "/run/quarantine/host/tmpx/card.png")
        #expect(SharedFolder.shown("/home/sam/card.png", in: shared) == "/home/sam/card.png")
        #expect(SharedFolder.shownText("not put back: /run/quarantine/host/tmp/x.png: gone", in: shared) == "not put back: /tmp/x.png: gone")
        // A unit without the bind (installed before it had one): its private /tmp is not watched, and that is said.
        let old = MountTable(mountinfo: "30 22 254:0 /tmp/systemd-private-0f3e-quarantine-guardian@sam.service-Xy/tmp /tmp rw shared:1 - ext4 /dev/vda rw\n")
        let unbound = SharedFolder.standard(mounts: old)
        #expect(unbound[0].unreachable?.contains("guardian enable") == true && unbound[1].unreachable == nil)
        #expect(!AccountPipeline.watchRoots(settings, environment: ["HOME": "/home/sam"], protectedHome: "/home/sam", shared: unbound).map(\.path).contains("/tmp"))
        #expect(AccountPipeline.unwatched(home: "/home/sam", mode: .child, shared: unbound).contains { $0.hasPrefix("/tmp (the service's unit gives it a private /tmp") })
        // Without the unit's bind: the folders themselves.
        #expect(SharedFolder.standard(mounts: MountTable(mountPoints: ["/"])).map(\.reachedAt) == ["/tmp", "/var/tmp", "/dev/shm"])
    }

    @Test("the mount table: mount points with spaces and tabs (octal escapes), media below a folder but not the folder itself")
    func mountTable() {
        let text = """
        22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
        90 22 8:17 / /media/sam/MY\\040STICK rw,nosuid shared:50 - vfat /dev/sdb1 rw,uid=1001
        91 22 0:60 / /media/sam rw shared:51 - tmpfs tmpfs rw
        92 22 0:61 / /run/media/sam/a\\011b rw shared:52 - tmpfs tmpfs rw
        93 22 0:62 / /media/samuel/X rw shared:53 - tmpfs tmpfs rw
        """
        let table = MountTable(mountinfo: text)
        #expect(table.mountPoints.contains("/media/sam/MY STICK"))
        #expect(table.mountPoints(below: ["/media/sam", "/run/media/sam"]) == ["/media/sam/MY STICK", "/run/media/sam/a\tb"])
    }

    @Test("only the account's own files are checked in /tmp, /var/tmp, /dev/shm and on media; anywhere else every file",
          .enabled(if: getuid() == 0, "giving a file to another account needs root"))
    func accountsFilesOnly() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-shared-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        FileManager.default.createFile(atPath: folder + "/mine.png", contents: Data([1]))
        FileManager.default.createFile(atPath: folder + "/theirs.png", contents: Data([1]))
        #expect(chown(folder + "/mine.png", 4242, 4242) == 0 && chown(folder + "/theirs.png", 4343, 4343) == 0)
        let accountOnly = Set(SharedFolder.standard(mounts: nil).map(\.reachedAt)).union([folder])
        #expect(accountOnly.isSuperset(of: ["/tmp", "/var/tmp", "/dev/shm"]))
        #expect(AccountPipeline.isAccountsFile(folder + "/mine.png", under: folder, account: 4242, accountOnly: accountOnly))
        #expect(!AccountPipeline.isAccountsFile(folder + "/theirs.png", under: folder, account: 4242, accountOnly: accountOnly))
        #expect(AccountPipeline.isAccountsFile(folder + "/theirs.png", under: folder, account: 4242, accountOnly: ["/tmp"]), "a folder of the home: every file")
    }

    @Test("in /tmp only folders the account can write in are walked and watched: its own, world-writable ones, its groups' writable ones; never skipped outside the shared folders")
    func sharedFolderWalk() {
        let shared = ["/tmp", "/run/quarantine/host/var-tmp"]
        func closed(_ path: String, owner: UInt32 = 0, group: UInt32 = 0, mode: UInt32) -> Bool {
            AccountPipeline.isClosedToAccount(path: path, owner: owner, group: group, mode: mode, account: 1001, groups: [1001, 27], shared: shared)
        }
        #expect(closed("/tmp/build", mode: 0o40755), "root's 0755 tree: no file of the account can appear there")
        #expect(closed("/tmp/other", owner: 1002, group: 1002, mode: 0o40700))
        #expect(!closed("/tmp/mine", owner: 1001, group: 1001, mode: 0o40700))
        #expect(!closed("/tmp/.X11-unix", mode: 0o41777))
        #expect(!closed("/tmp/team", owner: 1002, group: 27, mode: 0o40770), "writable by a group of the account's")
        #expect(closed("/tmp/team-ro", owner: 1002, group: 27, mode: 0o40750))
        #expect(closed("/run/quarantine/host/var-tmp/x", mode: 0o40755))
        #expect(!closed("/home/kid/Downloads/x", owner: 0, mode: 0o40755), "the home is walked whole")
        #expect(!closed("/media/kid/STICK/x", owner: 0, mode: 0o40755))
    }

    @Test("what is not watched is said, with its reason; browser caches are named by path under the home, never by a name")
    func unwatchedIsSaid() {
        let lines = AccountPipeline.unwatched(home: "/home/sam", mode: .child)
        #expect(lines.contains { $0.hasPrefix("/home/sam/.cache/chromium") && $0.contains("cache") })
        // /tmp, /var/tmp, /dev/shm and media mounted for the account are watched now; what is not is said.
        #expect(!lines.contains { $0.hasPrefix("/tmp") })
        #expect(lines.filter { $0.contains("not watched yet") } == ["the account's runtime folder /run/user/UID (XDG_RUNTIME_DIR; not watched yet)"])
        let withMedia = AccountPipeline.unwatched(home: "/home/sam", mode: .child, media: ["/media/sam", "/run/media/sam"])
        #expect(withMedia.contains { $0.contains("/mnt") && $0.contains("/media/sam and /run/media/sam") })
        // Private mounts are said by `guardian status` itself: the service's unit hides /proc/sys.
        #expect(!lines.contains { $0.hasPrefix("private mounts") })
        #expect(AccountPipeline.protectedHomeExclusions.allSatisfy { $0.path.contains("/") }, "a path, not a bare name")
    }
}
