import Foundation
import Testing
import TestSupport
@testable import QuarantineStore

/// `quarantine` on the command line: output, JSON and exit codes of the built binary.
@Suite("CLI")
struct CLITests {
    @Test func version() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let result = try await cli.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("quarantine 0."))
    }

    /// Every process of the program (each CLI run, the agent, each analysis worker) pays for the
    /// libraries it links at its start: libavdevice alone brought 75 more (SDL2, PulseAudio,
    /// libavfilter, ...) and made a start cost 105 ms of CPU instead of 65. `stream` opens it
    /// with dlopen when it needs a V4L2 device (CameraSupport; `doctor` and the `--blur-to`
    /// device test check that it still loads).
    @Test("the binary links no library only the stream verb or decoding needs (libavdevice, FFmpeg, libheif, libjxl, cairo, Poppler, librsvg are opened at run time)")
    func startLibraries() throws {
        let dynamic = try Spawned.run("/usr/bin/readelf", ["-d", CLIRunner.binary.path], environment: [:], timeout: 30)
        let needed = String(decoding: dynamic.stdout, as: UTF8.self).split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(dynamic.status == 0 && needed.count > 10, "readelf: \(String(decoding: dynamic.stderr, as: UTF8.self))")
        // The stream verb's (libavdevice), and the media libraries every decoding process opens
        // at their first use (CLazyLibraries), not at each start: `quarantine list` needs none.
        for library in ["libavdevice", "libavfilter", "libSDL2", "libpulse", "libavformat", "libavcodec", "libswscale", "libavutil",
                        "libheif", "libjxl", "libcairo", "libpoppler", "librsvg"] {
            #expect(!needed.contains { $0.contains(library) }, "\(library) is linked: \(needed.count) libraries")
        }
        // Their stand-in functions stay the program's own: none is exported for a library to bind
        // to. The release binary links the Swift runtime statically, and that link exports every
        // symbol of default visibility (libjxl's and Poppler's headers mark their functions so).
        let symbols = try Spawned.run("/usr/bin/nm", ["-D", "--defined-only", CLIRunner.binary.path], environment: [:], timeout: 30)
        let exported = Set(String(decoding: symbols.stdout, as: UTF8.self).split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) })
        let folder = CLIRunner.repositoryRoot.appendingPathComponent("Sources/CLazyLibraries")
        let standIns = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("qlazy_") && $0.hasSuffix(".c") }.flatMap { file in
            try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8).split(separator: "\n").compactMap { line -> String? in
                let declaration = "static __typeof__("
                guard line.hasPrefix(declaration), let end = line.firstIndex(of: ")") else { return nil }
                return String(line[line.index(line.startIndex, offsetBy: declaration.count)..<end])
            }
        }
        #expect(symbols.status == 0 && standIns.count > 100 && standIns.contains("avcodec_open2") && standIns.contains("JxlDecoderCreate"), "\(standIns)")
        #expect(standIns.filter(exported.contains).isEmpty, "exported: \(standIns.filter(exported.contains))")
    }

    @Test("a start that decodes nothing opens none of the media libraries; a scan of a JPEG (libturbojpeg) opens no FFmpeg, and of the test card no ONNX Runtime (nothing for the models to judge); one that decodes a PNG and a video opens both then")
    func mediaLibrariesOnFirstUse() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        // LD_DEBUG=files names every library the loader opens, at the start and at each dlopen.
        let listed = try await cli.run(["list"], environment: ["LD_DEBUG": "files"])
        #expect(listed.status == 0)
        #expect(!listed.stderr.contains("libavcodec") && !listed.stderr.contains("libpoppler"), "\(listed.stderr.suffix(3000))")
        let jpeg = cli.home.appendingPathComponent("card.jpg").path
        #expect(try await cli.run(["testcard", "--size", "256x256", jpeg]).status == 0)
        let jpegOnly = try await cli.run(["scan", jpeg], environment: ["LD_DEBUG": "files"])
        #expect(jpegOnly.status == 1 && jpegOnly.stdout.contains("FLAGGED"), "\(jpegOnly.stdout)")
        #expect(!jpegOnly.stderr.contains("libavcodec") && !jpegOnly.stderr.contains("libonnxruntime") && jpegOnly.stderr.contains("libturbojpeg"),
                "\(jpegOnly.stderr.suffix(3000))")
        let card = cli.home.appendingPathComponent("card.png").path
        #expect(try await cli.run(["testcard", "--size", "256x256", card]).status == 0)
        let video = cli.home.appendingPathComponent("clip.mp4").path
        try FFmpegTool.run(["-f", "lavfi", "-i", "testsrc=size=160x120:rate=5:duration=1", "-pix_fmt", "yuv420p", video])
        let scanned = try await cli.run(["scan", card, video], environment: ["LD_DEBUG": "files"])
        #expect(scanned.status == 1 && scanned.stdout.contains("FLAGGED"), "\(scanned.stdout)")
        #expect(scanned.stderr.contains("file=libavcodec.so") && scanned.stderr.contains("dynamically loaded by"), "\(scanned.stderr.suffix(3000))")
        // The clip's frames are no card: the models judge them, so the runtime is loaded then.
        #expect(scanned.stderr.contains("libonnxruntime.so"), "\(scanned.stderr.suffix(3000))")
    }

    @Test("help names every verb")
    func help() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let result = try await cli.run(["--help"])
        #expect(result.status == 0)
        for verb in ["scan", "list", "show", "release", "block", "history", "purge", "guardian", "mode", "testcard", "doctor"] { #expect(result.stdout.contains(verb)) }
    }

    @Test("usage errors exit 2")
    func usageErrors() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        #expect(try await cli.run(["scan"]).status == 2)
        #expect(try await cli.run(["scan", "--mode", "teenager", "x"]).status == 2)
        #expect(try await cli.run(["no-such-verb"]).status == 2)
        let missing = try await cli.run(["scan", "/nonexistent/\(UUID())"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("no such file"))
    }

    @Test("a benign photo: exit 0, a summary, nothing flagged")
    func benign() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let result = try await cli.run(["scan", CLIRunner.photos.appendingPathComponent("astronaut.png").path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Scanned 1 file"))
        #expect(result.stdout.contains("0 flagged"))
        #expect(!result.stdout.contains("FLAGGED"))
    }

    @Test("the test card: exit 1 and a FLAGGED line with the reason")
    func testCardFlagged() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let card = cli.home.appendingPathComponent("card.jpg").path
        let written = try await cli.run(["testcard", card])
        #expect(written.status == 0)
        let again = try await cli.run(["testcard", card])
        #expect(again.status == 2, "testcard must not overwrite")
        let result = try await cli.run(["scan", card])
        #expect(result.status == 1)
        #expect(result.stdout.contains("FLAGGED  \(card)  (TEST_CARD 1.00)"))
        #expect(try await cli.run(["scan", "--mode", "child", card]).status == 1)
        // The card over a quarter of a larger picture (--inset 50) is flagged too; less is refused.
        let inset = cli.home.appendingPathComponent("inset.jpg").path
        #expect(try await cli.run(["testcard", "--inset", "40", inset]).status != 0)
        #expect(try await cli.run(["testcard", "--inset", "50", "--size", "1600x900", inset]).status == 0)
        let insetScan = try await cli.run(["scan", inset])
        #expect(insetScan.status == 1 && insetScan.stdout.contains("FLAGGED  \(inset)  (TEST_CARD 1.00)"), "\(insetScan.stdout)")
    }

    @Test("testcard writes under its own name only (no temporary file renamed into place, which a holding service could take first); --force writes in place")
    func testCardWritesOneName() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let folder = cli.home.appendingPathComponent("Downloads").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let watch = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        try #require(watch >= 0)
        defer { close(watch) }
        try #require(inotify_add_watch(watch, folder, UInt32(IN_CREATE | IN_MOVED_TO)) >= 0)
        #expect(try await cli.run(["testcard", "--size", "256x256", folder + "/card.png"]).status == 0)
        var before = stat()
        #expect(stat(folder + "/card.png", &before) == 0)
        #expect(try await cli.run(["testcard", "--force", "--size", "300x300", folder + "/card.png"]).status == 0)
        var after = stat()
        #expect(stat(folder + "/card.png", &after) == 0 && after.st_ino == before.st_ino, "--force writes the same file")
        var names: [String] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = buffer.withUnsafeMutableBytes { read(watch, $0.baseAddress, $0.count) }
        var offset = 0
        while count > 0, offset + 16 <= count {
            let length = Int(buffer[offset + 12]) | Int(buffer[offset + 13]) << 8 | Int(buffer[offset + 14]) << 16 | Int(buffer[offset + 15]) << 24
            let name = buffer[(offset + 16)..<(offset + 16 + length)].prefix { $0 != 0 }
            names.append(String(decoding: name, as: UTF8.self))
            offset += 16 + length
        }
        #expect(names == ["card.png"], "every name that appeared in the folder: \(names)")
    }

    @Test("--json: one object per file with the documented fields; folders recurse; links are not followed")
    func jsonFolder() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let folder = cli.home.appendingPathComponent("Downloads/nested")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let photo = folder.appendingPathComponent("astronaut.png")
        try FileManager.default.copyItem(at: CLIRunner.photos.appendingPathComponent("astronaut.png"), to: photo)
        _ = try await cli.run(["testcard", folder.deletingLastPathComponent().appendingPathComponent("card.png").path])
        let cardBytes = try Data(contentsOf: folder.deletingLastPathComponent().appendingPathComponent("card.png"))
        try cardBytes.prefix(100).write(to: folder.appendingPathComponent("broken.png")) // cut inside its header
        try Data("notes".utf8).write(to: folder.appendingPathComponent("notes.txt"))
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("link.png"), withDestinationURL: photo)
        let before = try snapshot(cli.home.appendingPathComponent("Downloads"))

        let result = try await cli.run(["scan", "--json", cli.home.appendingPathComponent("Downloads").path])
        #expect(result.status == 1)
        let records = try result.jsonLines()
        #expect(records.count == 4, "card, astronaut, broken, notes; the link is not followed: \(result.stdout)")
        func record(_ suffix: String) -> [String: Any]? { records.first { ($0["path"] as? String)?.hasSuffix(suffix) == true } }
        let card = try #require(record("/card.png"))
        #expect(card["sensitive"] as? Bool == true)
        #expect(card["kind"] as? String == "image")
        #expect(card["reasons"] as? [String] == ["TEST_CARD 1.00"])
        let detections = try #require(card["detections"] as? [[String: Any]])
        #expect(detections.first?["label"] as? String == "TEST_CARD")
        #expect(detections.first?["box"] as? [Int] == [0, 0, 1024, 1024])
        #expect(card["elapsed_ms"] is Double || card["elapsed_ms"] is Int)
        let astronaut = try #require(record("/astronaut.png"))
        #expect(astronaut["sensitive"] as? Bool == false)
        #expect(astronaut["nsfw"] is Double)
        #expect((astronaut["detections"] as? [[String: Any]])?.contains { $0["label"] as? String == "FACE_FEMALE" } == true)
        let broken = try #require(record("/broken.png"))
        #expect(broken["error"] is String && (broken["error"] as! String).contains("broken.png"))
        #expect(["truncated", "corrupt"].contains(broken["error_code"] as? String))
        let notes = try #require(record("/notes.txt"))
        #expect(notes["kind"] as? String == "other")
        #expect(notes["error"] == nil)
        // Read-only: nothing moved or changed.
        #expect(try snapshot(cli.home.appendingPathComponent("Downloads")) == before)
    }

    @Test("a video: --json adds frame_time, samples, duration and coverage")
    func videoJSON() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let card = cli.home.appendingPathComponent("card.png"), video = cli.home.appendingPathComponent("clip.mp4")
        _ = try await cli.run(["testcard", "--size", "320x240", card.path])
        // 4 s, the card from 2 s (8 s, the card from 4 s, until issue 27's suite time: a clip under a minute
        // is sampled every 0.25 s, and it is scanned twice, each a process loading the models),
        // over a still picture: the samples before the card skip the models as practically
        // identical frames, so each scan judges the card and little else (1.35 s of CPU each over
        // a moving one).
        try FFmpegTool.run(["-f", "lavfi", "-i", "smptebars=s=320x240:r=25:d=4", "-i", card.path,
                            "-filter_complex", "[0][1]overlay=enable='between(t,2,3.25)'", "-pix_fmt", "yuv420p", "-c:v", "libx264",
                            "-preset", "ultrafast", video.path])
        let result = try await cli.run(["scan", "--json", video.path])
        #expect(result.status == 1)
        let record = try #require(try result.jsonLines().first)
        #expect(record["kind"] as? String == "video")
        #expect(record["sensitive"] as? Bool == true)
        let time = try #require(record["frame_time"] as? Double)
        #expect(time >= 1.9 && time <= 3.35, "\(time)")
        #expect((record["samples"] as? Int ?? 0) >= 2)
        #expect(record["duration"] as? Double == 4)
        #expect(record["coverage"] is Double)
        let text = try await cli.run(["scan", video.path])
        #expect(text.stdout.contains("FLAGGED  \(video.path) at 0:0"))
    }

    @Test("scan --quarantine, list, show, release (no overwrite), history: end to end in a temporary home")
    func vaultRoundTrip() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let downloads = cli.home.appendingPathComponent("Downloads")
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        let card = downloads.appendingPathComponent("card.jpg")
        _ = try await cli.run(["testcard", card.path])
        let original = try Data(contentsOf: card)
        chmod(card.path, 0o640)
        var times = [timespec(tv_sec: 1_600_000_000, tv_nsec: 0), timespec(tv_sec: 1_500_000_000, tv_nsec: 250_000_000)]
        utimensat(AT_FDCWD, card.path, &times, 0)
        try FFmpegTool.setExtendedAttribute(card.path, "user.xdg.origin.url", "https://example.invalid/card")
        try FileManager.default.copyItem(at: CLIRunner.photos.appendingPathComponent("astronaut.png"), to: downloads.appendingPathComponent("astronaut.png"))

        let scan = try await cli.run(["scan", "--quarantine", "--json", downloads.path])
        #expect(scan.status == 1)
        let flagged = try #require(try scan.jsonLines().first { $0["sensitive"] as? Bool == true })
        let id = try #require(flagged["vault_item"] as? Int)
        #expect(!FileManager.default.fileExists(atPath: card.path), "the flagged file left Downloads")
        #expect(FileManager.default.fileExists(atPath: downloads.appendingPathComponent("astronaut.png").path), "the benign photo stayed")

        let list = try await cli.run(["list", "--json"])
        let item = try #require(try list.jsonLines().first)
        #expect(item["id"] as? Int == id && item["original_path"] as? String == card.path && item["status"] as? String == "quarantined")
        #expect(item["reasons"] as? [String] == ["TEST_CARD 1.00"])
        let show = try await cli.run(["show", "--json", String(id)])
        let shown = try #require(try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any])
        let preview = try #require(shown["preview"] as? String)
        #expect(FileManager.default.fileExists(atPath: preview))
        // The preview says "something was here", it is not the picture: not even the test card
        // is recognised in it, by either mode's policy (the 24-px preview still was).
        for mode in ["adult", "child"] {
            let again = try await cli.run(["scan", "--json", "--mode", mode, preview])
            #expect(again.status == 0, "the preview is flagged in \(mode) mode: \(again.stdout) \(again.stderr)")
        }

        #expect(try await cli.run(["release", String(id)]).status == 1, "no terminal and no --yes: nothing happens")
        try Data("someone else's file".utf8).write(to: card)
        let release = try await cli.run(["release", "--yes", String(id)])
        #expect(release.status == 0, "\(release.stderr)")
        let restored = downloads.appendingPathComponent("card (1).jpg")
        #expect(release.stdout.contains(restored.path) && release.stdout.contains("nothing was overwritten"))
        #expect(try Data(contentsOf: restored) == original)
        var info = stat()
        lstat(restored.path, &info)
        #expect(info.st_mode & 0o777 == 0o640 && info.st_mtim.tv_sec == 1_500_000_000 && info.st_mtim.tv_nsec == 250_000_000)
        #expect(FFmpegTool.extendedAttribute(restored.path, "user.xdg.origin.url") == "https://example.invalid/card")
        #expect(try String(contentsOf: card, encoding: .utf8) == "someone else's file")
        #expect(try await cli.run(["list", "--json"]).stdout.isEmpty)
        let history = try await cli.run(["history", "--json"]).jsonLines().map { $0["kind"] as? String }
        #expect(history.first == "released")
        #expect(history.compactMap { $0 }.sorted() == ["analysed", "analysed", "flagged", "quarantined", "released"])
        // Released content is allowed from then on: its hash is on the allow list.
        #expect(try await cli.run(["show", String(id)]).stdout.contains("released"))

        // block: deletes, lists the hash; --keep seals.
        _ = try await cli.run(["testcard", "--size", "300x300", card.path + ".3.jpg"])
        #expect(try await cli.run(["scan", "--quarantine", card.path + ".3.jpg"]).status == 1)
        let blockID = try #require(try await cli.run(["list", "--json"]).jsonLines().first?["id"] as? Int)
        #expect(try await cli.run(["block", String(blockID)]).status == 1, "no terminal and no --yes: nothing happens")
        let block = try await cli.run(["block", "--yes", String(blockID)])
        #expect(block.status == 0 && block.stdout.contains("Deleted") && block.stdout.contains("quarantined on sight"))
        #expect(try await cli.run(["list", "--all", "--json"]).jsonLines().first?["status"] as? String == "blocked")
        #expect(try await cli.run(["block", "--yes", "--origin", String(blockID)]).status == 2, "already blocked")

        // purge lists what goes, refuses without confirmation, and records each item.
        // Other bytes than the card released above (that one is on the allow list now).
        _ = try await cli.run(["testcard", "--size", "320x240", card.path + ".2.jpg"])
        #expect(try await cli.run(["scan", "--quarantine", card.path + ".2.jpg"]).status == 1)
        let refused = try await cli.run(["purge", "--older-than", "0"])
        #expect(refused.status == 1 && refused.stdout.contains("card.jpg.2.jpg"))
        #expect(try await cli.run(["list", "--json"]).jsonLines().count == 1)
        let purged = try await cli.run(["purge", "--older-than", "0", "--yes"])
        #expect(purged.status == 0 && purged.stdout.contains("Purged 1 item"))
        #expect(try await cli.run(["list", "--json"]).stdout.isEmpty)
        #expect(try await cli.run(["history", "--json"]).jsonLines().first?["kind"] as? String == "purged")
        #expect(try await cli.run(["purge", "--older-than", "30"]).stdout.contains("Nothing in the vault"))
    }

    /// Runs `quarantine ARGS` in a pseudo-terminal, answering `steps` (regex, answer) in order.
    /// Sets the guardian PIN of `cli`'s home as a row with scrypt's cheap test N
    /// (``GuardianPIN/testRounds``): every check of it by the binary derives at the row's N.
    static func cheapPIN(_ cli: CLIRunner, _ pin: String) throws {
        let store = try AuditStore(path: cli.home.appendingPathComponent(".local/share/quarantine/audit.sqlite3").path)
        try GuardianPIN(store: store).set(pin, rounds: GuardianPIN.testRounds)
    }

    func throughTerminal(_ cli: CLIRunner, _ arguments: [String], steps: [(String, String)], environment: [String: String] = [:]) async throws -> CLIRunner.Result {
        try await cli.throughTerminal(arguments, steps: steps, environment: environment)
    }

    @Test("child mode: plain words, asked twice, and only the guardian PIN brings a picture back")
    func childMode() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let config = cli.home.appendingPathComponent(".config/quarantine")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        try Data("mode = \"child\"\n".utf8).write(to: config.appendingPathComponent("config.toml"))
        let card = cli.home.appendingPathComponent("Downloads/card.jpg")
        try FileManager.default.createDirectory(at: card.deletingLastPathComponent(), withIntermediateDirectories: true)
        _ = try await cli.run(["testcard", card.path])
        let scan = try await cli.run(["scan", "--quarantine", card.path])
        #expect(scan.status == 1)
        #expect(scan.stdout.contains("may show private parts of the body") && scan.stdout.contains("hidden to keep you safe"))

        #expect(try await cli.run(["list"]).stdout.contains("card.jpg: hidden, because it may show private parts of the body"))
        #expect(try await cli.run(["show", "1"]).stdout.contains("Hiding it keeps you safe"))

        // No PIN yet: nothing can come back.
        let noPIN = try await throughTerminal(cli, ["release", "1"], steps: [])
        #expect(noPIN.status == 1 && noPIN.stdout.contains("set-pin"))
        // --yes is for adults only.
        #expect(try await cli.run(["release", "--yes", "1"]).status == 2)

        let set = try await throughTerminal(cli, ["guardian", "set-pin"], steps: [("New guardian PIN", "2468"), ("same PIN again", "2468")])
        #expect(set.status == 0, "\(set.stdout)")
        #expect(!set.stdout.contains("2468"), "the PIN is never echoed")

        // Saying no at the first or second screen, or a wrong PIN: it stays hidden.
        let no = try await throughTerminal(cli, ["release", "1"], steps: [("bring it back\\? You need a grown-up", "n")])
        #expect(no.status == 1 && no.stdout.contains("may show private parts of the body") && no.stdout.contains("helpline"))
        let secondNo = try await throughTerminal(cli, ["release", "1"], steps: [("You need a grown-up", "y"), ("Are you sure\\?", "n")])
        #expect(secondNo.status == 1 && secondNo.stdout.contains("stays hidden"))
        let wrong = try await throughTerminal(cli, ["release", "1"], steps: [("You need a grown-up", "y"), ("Are you sure\\?", "y"), ("Guardian PIN", "1111")])
        #expect(wrong.status == 1 && wrong.stdout.contains("not right"))
        #expect(!FileManager.default.fileExists(atPath: card.path))

        // No PIN at hand: Enter at the prompt (or --ask) records a request the guardian sees.
        let asked = try await throughTerminal(cli, ["release", "1"], steps: [("You need a grown-up", "y"), ("Are you sure\\?", "y"), ("Guardian PIN", "")])
        #expect(asked.status == 1 && asked.stdout.contains("Your question is saved"), "\(asked.stdout)")
        #expect(try await cli.run(["list"]).stdout.contains("You asked a grown-up for it back."))
        #expect(try await cli.run(["list", "--json"]).jsonLines().first?["release_requested_at"] is String)
        #expect(try await cli.run(["release", "--ask", "1"]).status == 0, "asking again is fine, and needs no terminal")
        #expect(try await cli.run(["history", "--json"]).jsonLines().filter { $0["kind"] as? String == "release_requested" }.count == 1, "one request, recorded once")
        #expect(!FileManager.default.fileExists(atPath: card.path))

        let right = try await throughTerminal(cli, ["release", "1"], steps: [("You need a grown-up", "y"), ("Are you sure\\?", "y"), ("Guardian PIN", "2468")])
        #expect(right.status == 0, "\(right.stdout)")
        #expect(FileManager.default.fileExists(atPath: card.path))
        #expect(try await cli.run(["history", "--json"]).jsonLines().first?["actor"] as? String == "guardian")
        #expect(try await cli.run(["list", "--all", "--json"]).jsonLines().first?["release_requested_at"] == nil, "a released item has no open request")
        // The PIN that `guardian set-pin` made (at the full cost) was checked above, wrong and
        // right; the same PIN again as a cheap row for the checks below (each derivation at the
        // full cost is ~0.45 s of CPU in a debug build; issue 27's suite time).
        try Self.cheapPIN(cli, "2468")

        // Changing the PIN needs the current one.
        let change = try await throughTerminal(cli, ["guardian", "set-pin"], steps: [("Current guardian PIN", "0000")])
        #expect(change.status == 1)

        // Leaving child mode needs the PIN; the rest of the configuration is kept.
        #expect(try await cli.run(["mode"]).stdout == "child\n")
        #expect(try await cli.run(["mode", "adult"]).status == 1, "no terminal: refused")
        let wrongMode = try await throughTerminal(cli, ["mode", "adult"], steps: [("Guardian PIN", "1357")])
        #expect(wrongMode.status == 1 && wrongMode.stdout.contains("Still in child mode"))
        let leave = try await throughTerminal(cli, ["mode", "adult"], steps: [("Guardian PIN", "2468")])
        #expect(leave.status == 0, "\(leave.stdout)")
        #expect(try await cli.run(["mode"]).stdout == "adult\n")
        #expect(try await cli.run(["mode", "child"]).status == 0, "entering child mode needs no PIN once one is set")
        #expect(try await cli.run(["history", "--json"]).jsonLines().first?["kind"] as? String == "mode_changed")
    }

    @Test("child mode holds when the configuration cannot be read; purge and watch remove need the PIN; scan --quarantine honours the allow list")
    func childModeCannotBeLowered() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let downloads = cli.home.appendingPathComponent("Downloads")
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        let card = downloads.appendingPathComponent("card.jpg")
        _ = try await cli.run(["testcard", card.path])

        // Adult mode: hidden, released, then scanned again: released bytes stay where they are.
        #expect(try await cli.run(["scan", "--quarantine", card.path]).status == 1)
        #expect(try await cli.run(["release", "--yes", "1"]).status == 0)
        let again = try await cli.run(["scan", "--quarantine", "--json", card.path])
        #expect(FileManager.default.fileExists(atPath: card.path), "a released file was hidden again: \(again.stdout)")
        #expect(try again.jsonLines().first?["list_decision"] as? String == "released before (on the allow list): left where it is")

        // A guardian sets a PIN and child mode; a second card is hidden. (`guardian set-pin` on a
        // terminal, at the full cost, is checked in ``childMode()``; here the PIN is a cheap row.)
        try Self.cheapPIN(cli, "2468")
        #expect(try await cli.run(["mode", "child"]).status == 0)
        let second = downloads.appendingPathComponent("second.jpg")
        _ = try await cli.run(["testcard", "--size", "640x480", second.path])
        #expect(try await cli.run(["scan", "--quarantine", second.path]).status == 1)

        // The configuration cannot be found, or has a syntax error: still child mode.
        let nowhere = try await cli.run(["release", "--yes", "2"], environment: ["XDG_CONFIG_HOME": "/nonexistent"])
        #expect(nowhere.status == 2 && nowhere.stderr.contains("--yes works only in adult mode"), "\(nowhere.stderr)")
        let config = cli.home.appendingPathComponent(".config/quarantine/config.toml")
        try "mode = \"adult\"\n[watch\n".write(to: config, atomically: true, encoding: .utf8)
        let broken = try await cli.run(["release", "--yes", "2"])
        #expect(broken.status == 2 && broken.stderr.contains("child mode's rules apply"), "\(broken.stderr)")
        // A hand edit back to adult mode does not undo what the guardian set.
        try "mode = \"adult\"\n".write(to: config, atomically: true, encoding: .utf8)
        #expect(try await cli.run(["release", "--yes", "2"]).status == 2)
        #expect(try await cli.run(["mode"]).stdout == "child\n")
        #expect(!FileManager.default.fileExists(atPath: second.path))

        // Purge and watch remove weaken protection: the PIN, on a terminal, never --yes.
        let purge = try await cli.run(["purge", "--older-than", "0", "--yes"])
        #expect(purge.status == 2, "\(purge.stdout) \(purge.stderr)")
        #expect(try await cli.run(["list", "--json"]).jsonLines().count == 1)
        let remove = try await cli.run(["watch", "remove", downloads.path])
        #expect(remove.status == 1 && remove.stderr.contains("grown-up"), "\(remove.stderr)")
        #expect(try await cli.run(["watch", "list"]).stdout.contains(downloads.path))
        let wrongPIN = try await throughTerminal(cli, ["purge", "--older-than", "0"], steps: [("Guardian PIN", "1111")])
        #expect(wrongPIN.status == 1 && wrongPIN.stdout.contains("not right"))
        let rightPIN = try await throughTerminal(cli, ["purge", "--older-than", "0"], steps: [("Guardian PIN", "2468")])
        #expect(rightPIN.status == 0 && rightPIN.stdout.contains("Purged 1 item"), "\(rightPIN.stdout)")
    }

    @Test("privacy: the database, its -wal and -shm, the vault and meta.json are 0600 in 0700 folders; loose ones left by older versions are tightened, and it says so once")
    func privateFiles() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        func mode(_ path: String) -> mode_t { var info = stat(); return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0 }
        let data = cli.home.appendingPathComponent(".local/share/quarantine").path
        let card = cli.home.appendingPathComponent("card.jpg")
        _ = try await cli.run(["testcard", card.path])
        #expect(try await cli.run(["scan", "--quarantine", card.path]).status == 1)
        let folder = data + "/vault/" + (try FileManager.default.contentsOfDirectory(atPath: data + "/vault").first { $0.hasPrefix("1-") } ?? "1")
        for path in [data, data + "/vault", folder] { #expect(mode(path) == 0o700, "\(path): \(String(mode(path), radix: 8))") }
        for path in [data + "/audit.sqlite3", folder + "/item", folder + "/meta.json", folder + "/preview.jpg"] {
            #expect(mode(path) == 0o600, "\(path): \(String(mode(path), radix: 8))")
        }
        // As an older version left them: readable by everyone.
        chmod(data, 0o755)
        chmod(data + "/vault", 0o755)
        chmod(data + "/audit.sqlite3", 0o644)
        let first = try await cli.run(["list"])
        #expect(first.stderr.contains("made private") && first.stderr.contains("755 -> 700"), "\(first.stderr)")
        #expect(mode(data) == 0o700 && mode(data + "/vault") == 0o700 && mode(data + "/audit.sqlite3") == 0o600)
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: data + "/audit.sqlite3" + suffix) {
            #expect(mode(data + "/audit.sqlite3" + suffix) == 0o600, "audit.sqlite3\(suffix)")
        }
        #expect(!(try await cli.run(["list"]).stderr.contains("made private")), "said once")
    }

    @Test("only errors: exit 2")
    func onlyErrors() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let bad = cli.home.appendingPathComponent("bad.jpg")
        try Data([0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]).write(to: bad)
        let result = try await cli.run(["scan", "--json", bad.path])
        #expect(result.status == 2)
        #expect(try result.jsonLines().first?["error"] != nil)
    }

    @Test("a missing model: exit 2 and a message that says what to do")
    func missingModels() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let result = try await cli.run(["scan", CLIRunner.photos.path], environment: ["QUARANTINE_DATA_DIR": cli.home.path])
        #expect(result.status == 2)
        #expect(result.stderr.contains("make setup"))
        let doctor = try await cli.run(["doctor"], environment: ["QUARANTINE_DATA_DIR": cli.home.path])
        #expect(doctor.status == 1)
        #expect(doctor.stdout.contains("MISSING"))
    }

    @Test("a bad configuration file is named with the key at fault")
    func badConfig() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let config = cli.home.appendingPathComponent("config.toml")
        try Data("[policy.adult.labels]\nFACE_FEMALE = 7\n".utf8).write(to: config)
        let result = try await cli.run(["scan", "--config", config.path, CLIRunner.photos.appendingPathComponent("astronaut.png").path])
        #expect(result.status == 2)
        #expect(result.stderr.contains("FACE_FEMALE"))
    }

    @Test("doctor: everything in place, and --json")
    func doctor() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let text = try await cli.run(["doctor"])
        #expect(text.status == 0, "\(text.stdout)")
        #expect(text.stdout.contains("sha256 verified"))
        let json = try await cli.run(["doctor", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["ok"] as? Bool == true)
        let names = (object["checks"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        for name in ["libonnxruntime.so.1.31.1", "320n.onnx", "open-nsfw.onnx", "decoder jpeg", "decoder png", "inotify max_user_watches"] {
            #expect(names.contains(name), "\(name)")
        }
    }

    @Test("doctor with a media library that cannot be opened (libheif hidden in a private mount namespace): says which and why, exits 1, does not crash; list still works")
    func doctorWithoutAMediaLibrary() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let folder = try #require(["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"].first { FileManager.default.fileExists(atPath: $0 + "/libheif.so.1") })
        let hidden = folder + "/" + (try FileManager.default.destinationOfSymbolicLink(atPath: folder + "/libheif.so.1"))
        // Root only (as the suite runs here): a private mount namespace where the library is empty.
        let script = "mount --bind /dev/null \"$1\" && shift && exec \"$@\""
        for arguments in [["doctor"], ["list"]] {
            let run = try await offPool {
                try Spawned.run("/usr/bin/unshare", ["-m", "--propagation", "private", "/bin/sh", "-c", script, "sh", hidden, CLIRunner.binary.path] + arguments,
                                environment: cli.environment([:]), timeout: 60)
            }
            let out = String(decoding: run.stdout, as: UTF8.self), err = String(decoding: run.stderr, as: UTF8.self)
            if arguments == ["doctor"] {
                #expect(run.status == 1 && out.contains("media library") && out.contains("libheif.so.1 cannot be opened"), "\(run.status) \(out) \(err)")
            } else {
                #expect(run.status == 0, "list needs no media library: \(run.status) \(err)")
            }
        }
    }

    @Test("packaging/ ships completions and a man page that match the CLI ('make man' regenerates them)")
    func shippedCompletionsAndManual() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        for shell in ["bash", "zsh", "fish"] {
            let generated = try await cli.run(["--generate-completion-script", shell]).stdout
            let shipped = try String(contentsOf: CLIRunner.repositoryRoot.appendingPathComponent("packaging/completions/quarantine.\(shell)"), encoding: .utf8)
            #expect(generated == shipped, "packaging/completions/quarantine.\(shell) is stale: run 'make man'")
        }
        let manual = try String(contentsOf: CLIRunner.repositoryRoot.appendingPathComponent("packaging/man/quarantine.1"), encoding: .utf8)
        for verb in ["scan", "testcard", "doctor", "--json", "--mode"] { #expect(manual.contains(verb), "man page lacks \(verb): run 'make man'") }
    }

    /// Paths with size and modification time, to prove a scan changed nothing.
    func snapshot(_ root: URL) throws -> [String: String] {
        var out: [String: String] = [:]
        let keys: [URLResourceKey] = [.fileSizeKey, .contentModificationDateKey]
        for case let url as URL in FileManager.default.enumerator(at: root, includingPropertiesForKeys: keys)! {
            let values = try url.resourceValues(forKeys: Set(keys))
            out[url.path] = "\(values.fileSize ?? -1) \(values.contentModificationDate?.timeIntervalSince1970 ?? 0)"
        }
        return out
    }
}
