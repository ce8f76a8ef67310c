import Foundation
import SensitivityAnalysis
import Testing
import TestSupport

/// The real process killed (SIGKILL) during a cross-filesystem move into the vault and a release
/// out of it; the next start must leave the file in exactly one place, intact. Every step of
/// both moves is proven in process (VaultTests, "killed at any step"); one real kill in each move
/// checks that a real kill, with its released locks and half-written file, ends the same way.
@Suite("Crash recovery", .serialized)
struct CrashRecoveryTests {
    /// A flagged file big enough that a kill lands mid-copy: a clip of the test card, padded
    /// with 150 MB after its index (players and the demuxer ignore trailing bytes).
    static func makeBigFlaggedFile(in dir: URL, cli: CLIRunner) async throws -> URL {
        let card = dir.appendingPathComponent("card.png"), clip = dir.appendingPathComponent("big.mp4")
        _ = try await cli.run(["testcard", "--size", "320x240", card.path])
        try FFmpegTool.run(["-loop", "1", "-i", card.path, "-t", "2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                            "-movflags", "+faststart", clip.path])
        let handle = try FileHandle(forWritingTo: clip)
        try handle.seekToEnd()
        let chunk = Data(count: 10 << 20)
        for _ in 0..<15 { try handle.write(contentsOf: chunk) }
        try handle.close()
        return clip
    }

    /// The file's sha256, in process (the sha256sum program it replaces took 3.4 s of the suite's
    /// CPU for these 150-MB files; issue 27): the streaming hash the models are checked with.
    static func sha256(_ path: String) throws -> String { try ModelCatalog.sha256(ofFileAt: path) }

    /// Every regular file under `root` with the given hash.
    static func copies(of digest: String, under roots: [URL]) throws -> [String] {
        var found: [String] = []
        for root in roots {
            guard let walker = FileManager.default.enumerator(atPath: root.path) else { continue }
            for case let name as String in walker {
                let path = root.appendingPathComponent(name).path
                var info = stat()
                guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 100_000_000 else { continue }
                if try sha256(path) == digest { found.append(path) }
            }
        }
        return found
    }

    /// Waits until one of `paths` exists (the move has begun), at most 30 s.
    static func waitForAny(_ paths: [String]) {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && !paths.contains(where: { FileManager.default.fileExists(atPath: $0) }) {
            Thread.sleep(forTimeInterval: 0.002)
        }
    }

    /// Waits until item 1's file (or its partial copy) appears in the vault, at most 30 s.
    static func waitForItem(in vault: String) {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let folders = (try? FileManager.default.contentsOfDirectory(atPath: vault))?.filter { $0.hasPrefix("1-") } ?? []
            for folder in folders where ["item", "item.part"].contains(where: { FileManager.default.fileExists(atPath: "\(vault)/\(folder)/\($0)") }) {
                return
            }
            Thread.sleep(forTimeInterval: 0.002)
        }
    }

    @Test("killed while quarantining across filesystems, at any instant of the move: one intact copy after restart",
          arguments: [0.15])
    func killDuringQuarantine(delay: Double) async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let data = URL(fileURLWithPath: "/dev/shm/quarantine-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let downloads = cli.home.appendingPathComponent("Downloads")
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        let source = try await Self.makeBigFlaggedFile(in: cli.home, cli: cli)
        let file = downloads.appendingPathComponent("big.mp4")
        try FileManager.default.moveItem(at: source, to: file)
        let digest = try Self.sha256(file.path)

        let process = try cli.start(["scan", "--quarantine", file.path], environment: ["XDG_DATA_HOME": data.path])
        // The kill is timed on a thread of its own (a shared thread may be late to resume).
        let running = process
        let vault = data.appendingPathComponent("quarantine/vault").path
        await offPool {
            Self.waitForItem(in: vault)
            Thread.sleep(forTimeInterval: delay)
            kill(running.processIdentifier, SIGKILL)
            running.waitUntilExit()
        }

        // The next start recovers whatever the journal says was under way.
        let history = try await cli.run(["history", "--json"], environment: ["XDG_DATA_HOME": data.path])
        #expect(history.status == 0)
        print("kill at \(delay) s during quarantine: events \(try history.jsonLines().map { "\($0["kind"] ?? "") \($0["detail"] ?? "")" })")
        let places = try Self.copies(of: digest, under: [downloads, data])
        #expect(places.count == 1, "after a kill at \(delay) s the file is in \(places.count) places: \(places)")
        let leftovers = (FileManager.default.enumerator(atPath: data.path)?.allObjects as? [String] ?? []).filter { $0.hasSuffix(".part") }
        #expect(leftovers.isEmpty, "partial copies left: \(leftovers)")
        let list = try await cli.run(["list", "--json"], environment: ["XDG_DATA_HOME": data.path]).jsonLines()
        #expect(list.count == (places.first?.hasPrefix(data.path) == true ? 1 : 0), "the database agrees with the disk")
    }

    @Test("killed while releasing across filesystems, at any instant of the move: one intact copy after restart",
          arguments: [0.15])
    func killDuringRelease(delay: Double) async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let data = URL(fileURLWithPath: "/dev/shm/quarantine-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let downloads = cli.home.appendingPathComponent("Downloads")
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        let file = downloads.appendingPathComponent("big.mp4")
        try FileManager.default.moveItem(at: try await Self.makeBigFlaggedFile(in: cli.home, cli: cli), to: file)
        let digest = try Self.sha256(file.path)
        let env = ["XDG_DATA_HOME": data.path]
        #expect(try await cli.run(["scan", "--quarantine", file.path], environment: env).status == 1)
        #expect(!FileManager.default.fileExists(atPath: file.path))

        let process = try cli.start(["release", "--yes", "1"], environment: env)
        let running = process
        let paths = [file.path + ".part", file.path]
        await offPool {
            Self.waitForAny(paths)
            Thread.sleep(forTimeInterval: delay)
            kill(running.processIdentifier, SIGKILL)
            running.waitUntilExit()
        }

        let history = try await cli.run(["history", "--json"], environment: env)
        #expect(history.status == 0)
        print("kill at \(delay) s during release: events \(try history.jsonLines().map { "\($0["kind"] ?? "") \($0["detail"] ?? "")" })")
        let places = try Self.copies(of: digest, under: [downloads, data])
        #expect(places.count == 1, "after a kill at \(delay) s the file is in \(places.count) places: \(places)")
        let status = try await cli.run(["list", "--all", "--json"], environment: env).jsonLines().first?["status"] as? String
        #expect(status == (places.first == file.path ? "released" : "quarantined"), "status \(status ?? "-") vs \(places)")
    }
}
