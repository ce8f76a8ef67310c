import Foundation
import Testing
import TestSupport

/// The agent end to end while its audit database refuses it: locked by another process, damaged.
/// Same harness as ``AgentTests``.
@Suite("Agent: database faults")
struct DatabaseFaultTests {
    static func databasePath(_ agent: AgentHarness) -> String {
        agent.cli.home.appendingPathComponent(".local/share/quarantine/audit.sqlite3").path
    }

    @Test("locked by another process for 30 s: files stay where they are, nothing is analysed in a loop, the problem is said once and shown by status; once released the card is hidden and the photo left, each analysed once")
    func lockedByAnotherProcess() async throws {
        let agent = try AgentHarness(); defer { agent.cleanUp() }
        try await agent.start()
        let card = agent.downloads.appendingPathComponent("card.jpg"), photo = agent.downloads.appendingPathComponent("photo.jpg")
        let scratch = agent.cli.home.appendingPathComponent("card-scratch.jpg")
        _ = try await agent.cli.run(["testcard", scratch.path])
        let locker = try DatabaseLocker(path: Self.databasePath(agent))
        let locked = Date()
        try FileManager.default.moveItem(at: scratch, to: card)
        try FileManager.default.copyItem(at: AgentTests.benign, to: photo)
        #expect(await agent.wait(timeout: 15) { agent.logText.contains("is locked by another process") }, "log:\n\(agent.logText)")
        // The status is written beside the agent's lock meanwhile; `status` still opens the database.
        var last: [String: Any]?
        #expect(await agent.wait(timeout: 5) { last = try await agent.status()["last_status"] as? [String: Any]; return last?["databaseFault"] as? String == "locked" },
                "\(String(describing: last))")
        #expect((last?["problem"] as? String)?.contains("is locked by another process") == true)
        try await Task.sleep(for: .seconds(max(0, 30 - Date().timeIntervalSince(locked))))
        #expect(FileManager.default.fileExists(atPath: card.path) && FileManager.default.fileExists(atPath: photo.path), "both stay where they are")
        locker.release()

        // The counters come from the agent's published status (at most 4 times a second), which
        // can trail the vault by one publication: wait for both counts, not only the item.
        #expect(await agent.wait(timeout: 30) {
            let counters = try await agent.counters()
            return try await agent.items().count == 1 && counters["clean"] == 1 && counters["quarantined"] == 1
        }, "log:\n\(agent.logText)")
        #expect(!FileManager.default.fileExists(atPath: card.path) && FileManager.default.fileExists(atPath: photo.path))
        let log = agent.logText
        #expect(log.components(separatedBy: "is locked by another process").count - 1 == 1, "said once:\n\(log)")
        #expect(log.contains("works again"), "\(log)")
        #expect(log.components(separatedBy: "not sensitive").count - 1 == 1, "the photo was analysed once:\n\(log)")
        let counters = try await agent.counters()
        #expect(counters["quarantined"] == 1 && (counters["not_moved"] ?? 0) == 0, "\(counters)")
        #expect((try await agent.status()["last_status"] as? [String: Any])?["databaseFault"] == nil)
        #expect(await agent.stop().status == 0)
    }

    @Test("a torn page: doctor names the damage and the fix; the agent starts and says so (or refuses clearly), moving nothing; doctor --repair moves the file aside and lists the vault again; the agent then judges what waited")
    func tornPage() async throws {
        let agent = try AgentHarness(); defer { agent.cleanUp() }
        try await agent.start()
        try await agent.writeCard(agent.downloads.appendingPathComponent("first.jpg"))
        #expect(await agent.wait(timeout: 30) { try await agent.items().count == 1 }, "log:\n\(agent.logText)")
        #expect(await agent.stop().status == 0)

        // Everything into the main file first (the agent's exit leaves the WAL to the next opener).
        let path = Self.databasePath(agent)
        let checkpoint = Process()
        checkpoint.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        checkpoint.arguments = ["-c", "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA wal_checkpoint(TRUNCATE)')", path]
        try checkpoint.run()
        checkpoint.waitUntilExit()
        // One page in the middle overwritten, as a torn write leaves it (page size from the header).
        let header = try #require(FileHandle(forReadingAtPath: path)).readData(ofLength: 100)
        let pageSize = Int(header[16]) << 8 | Int(header[17])
        let pages = (try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int) / pageSize
        #expect(pageSize >= 512 && pages >= 4, "page size \(pageSize), \(pages) pages")
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seek(toFileOffset: UInt64(pages / 2 * pageSize))
        handle.write(Data((0..<pageSize).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }))
        try handle.close()

        let doctor = try await agent.run(["doctor"])
        #expect(doctor.status == 1 && doctor.stdout.contains("is damaged") && doctor.stdout.contains("quarantine doctor --repair"), "\(doctor.stdout)")

        let second = agent.downloads.appendingPathComponent("second.jpg")
        try await agent.start(waitForReady: false)
        #expect(await agent.wait(timeout: 30) { agent.logText.contains("is damaged") || agent.process?.isRunning == false }, "log:\n\(agent.logText)")
        #expect(agent.logText.contains("is damaged") && agent.logText.contains("quarantine doctor --repair"), "named with the fix:\n\(agent.logText)")
        if agent.process?.isRunning == true {
            try await agent.writeCard(second, size: "648x480")
            try await Task.sleep(for: .seconds(4))
            #expect(FileManager.default.fileExists(atPath: second.path), "nothing moved while the database is damaged:\n\(agent.logText)")
            #expect(await agent.stop().status == 0)
        } else {
            #expect(agent.process?.terminationStatus == 1)
            agent.process = nil
            try await agent.writeCard(second, size: "648x480")
        }

        let repair = try await agent.run(["doctor", "--repair"])
        #expect(repair.stdout.contains("moved aside to") && repair.stdout.contains("first.jpg"), "\(repair.stdout)")
        let aside = try FileManager.default.contentsOfDirectory(atPath: (path as NSString).deletingLastPathComponent).filter { $0.contains(".damaged-") }
        #expect(!aside.isEmpty, "the damaged file is kept")
        try await agent.start()
        // Gone from Downloads is not yet listed: the preview is written and the record finished
        // after the move, so the listing is what is waited for.
        #expect(await agent.wait(timeout: 30) { !FileManager.default.fileExists(atPath: second.path) }, "log:\n\(agent.logText)")
        func listed() async throws -> Set<String> {
            Set(try await agent.items().compactMap { ($0["original_path"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent } })
        }
        let bothListed = await agent.wait(timeout: 10) { try await listed() == ["first.jpg", "second.jpg"] }
        let listedNow = try await listed()
        #expect(bothListed, "listed: \(listedNow)")
        #expect(await agent.stop().status == 0)
        let after = try await agent.run(["doctor"])
        #expect(after.stdout.contains("every page is sound") && after.stdout.contains("every file in"), "\(after.stdout)")
    }

    @Test("on a read-only file system at start (the vault, the database, the lock): the agent waits, says so once, moves nothing; once the file system is writable it starts and hides what waited",
          .enabled(if: getuid() == 0, "mounting a tmpfs needs root (file modes do not stop root)"))
    func readOnlyFileSystem() async throws {
        let agent = try AgentHarness(); defer { agent.cleanUp() }
        // The vault and the audit database on a file system of their own, made once by a first run.
        let data = agent.cli.home.appendingPathComponent(".local/share")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        #expect(mount("tmpfs", data.path, "tmpfs", 0, "size=16m") == 0, "mount a tmpfs: \(String(cString: strerror(errno)))")
        defer { _ = umount2(data.path, Int32(MNT_DETACH)) }
        try await agent.start()
        #expect(await agent.stop().status == 0)
        // Remounted read-only while nothing has it open for writing (as a file system that went
        // read-only after an error would be).
        #expect(mount(nil, data.path, nil, UInt(MS_REMOUNT | MS_RDONLY), nil) == 0, "remount read-only: \(String(cString: strerror(errno)))")

        try await agent.start(waitForReady: false)
        let card = agent.downloads.appendingPathComponent("card.jpg")
        #expect(await agent.wait(timeout: 20) { agent.logText.contains("is on a read-only file system") || agent.process?.isRunning == false }, "log:\n\(agent.logText)")
        try await agent.writeCard(card)
        try await Task.sleep(for: .seconds(7)) // two checks
        #expect(agent.process?.isRunning == true, "the agent waits, it does not exit:\n\(agent.logText)")
        #expect(FileManager.default.fileExists(atPath: card.path), "nothing is moved while the vault and database cannot be written")
        #expect(agent.logText.components(separatedBy: "read-only file system").count - 1 == 1, "said once:\n\(agent.logText)")

        #expect(mount(nil, data.path, nil, UInt(MS_REMOUNT), nil) == 0, "remount read-write: \(String(cString: strerror(errno)))")
        #expect(await agent.wait(timeout: 30) { !FileManager.default.fileExists(atPath: card.path) }, "log:\n\(agent.logText)")
        #expect(agent.logText.contains("is writable again"), "\(agent.logText)")
        #expect(await agent.wait(timeout: 10) { try await agent.items().count == 1 }, "listed once its record is finished:\n\(agent.logText)")
        #expect(await agent.stop().status == 0)
    }
}
