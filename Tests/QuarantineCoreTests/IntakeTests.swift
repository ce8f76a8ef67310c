import Foundation
import MediaDecoding
import QuarantineStore
import SensitivityAnalysis
import Testing
@testable import QuarantineCore
import Locking

/// The intake use case in process: a real vault and database in a fresh folder; the analysis is
/// a stand-in (named so) where the point is the decision, and the real analyzer where it is not.
@Suite("Intake")
struct IntakeTests {
    /// A Downloads folder, a vault and its database.
    struct Place {
        let folder: URL
        let vault: Vault
        var downloads: URL { folder.appendingPathComponent("Downloads") }

        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-intake-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("Downloads"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("data"), withIntermediateDirectories: true)
            vault = try Vault(root: folder.appendingPathComponent("data/vault").path,
                              store: AuditStore(path: folder.appendingPathComponent("data/audit.sqlite3").path))
        }

        func cleanUp() { try? FileManager.default.removeItem(at: folder) }

        /// A file with `bytes` in Downloads, queued as the watcher would queue it.
        func arrive(_ name: String, _ bytes: [UInt8]) throws -> BacklogEntry {
            let url = downloads.appendingPathComponent(name)
            try Data(bytes).write(to: url)
            let entry = BacklogEntry(path: url.path, root: downloads.path, direction: .incoming, identity: try MediaFile(path: url.path).identity)
            try vault.store.enqueue([entry], mode: .adult)
            return entry
        }
    }

    /// A picture's bytes (PNG of the test card, or of a plain grey field).
    static func png(card: Bool, width: Int = 320, height: Int = 240) throws -> [UInt8] {
        if card { return try PNGEncoder.encode(TestCard.render(width: width, height: height)) }
        return try PNGEncoder.encode(RGBImage(width: width, height: height, pixels: [UInt8](repeating: 128, count: width * height * 3)))
    }

    /// A stand-in for the analysis: answers what the test says, and counts its calls.
    final class StandInAnalysis: Sendable {
        let calls = Locked(0)
        let answer: @Sendable (String, Settings) -> FileReport

        init(_ answer: @escaping @Sendable (String, Settings) -> FileReport) { self.answer = answer }

        /// "Sensitive" or not, for the file as it is now.
        static func judging(sensitive: Bool) -> StandInAnalysis {
            StandInAnalysis { path, settings in
                let identity = (try? MediaFile(path: path).identity) ?? FileIdentity(device: 0, inode: 0, size: 0, modificationNanoseconds: 0)
                let analysis = SensitivityAnalysis(path: path, kind: .image, type: .png, isSensitive: sensitive, detections: [], nsfwScore: 0.9,
                                                   reasons: sensitive ? ["open_nsfw 0.90"] : [], mode: settings.mode, width: 320, height: 240,
                                                   identity: identity, elapsedMilliseconds: 1)
                return FileReport(path: path, kind: .image, type: .png, analysis: analysis, failure: nil, elapsedMilliseconds: 1)
            }
        }

        func intake(_ vault: Vault) -> Intake {
            Intake(vault: vault, blocking: { _, work in try work() }, analysis: { path, settings, _ in
                self.calls.withLock { $0 += 1 }
                return self.answer(path, settings)
            })
        }
    }

    func settings(_ mode: AnalysisMode) -> Settings { var s = Settings(); s.mode = mode; return s }

    @Test("flagged: moved into the vault, recorded (flagged, quarantined, seen), the notice in the mode's words")
    func flaggedIsHidden() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try place.arrive("a.png", try Self.png(card: false))
        let outcome = await StandInAnalysis.judging(sensitive: true).intake(place.vault).handle(entry, kind: .image, settings: settings(.child))
        guard case .hidden(let item, let verdict, let reasons, let notice) = outcome else { Issue.record("\(outcome)"); return }
        #expect(verdict == .quarantined && reasons == ["open_nsfw 0.90"])
        #expect(notice.summary == "We put a picture away for you")
        #expect(!FileManager.default.fileExists(atPath: entry.path))
        #expect(try place.vault.store.items().map(\.id) == [item.id])
        #expect(try place.vault.store.events().map(\.kind) == [.quarantined, .flagged])
        #expect(try place.vault.store.backlogCount() == 0)
        #expect(try place.vault.store.hasSeen(entry.identity, at: entry.path, in: .child))
    }

    @Test("lists first: released bytes are left alone, blocked bytes hidden, both without analysis; a clean verdict is reused per mode")
    func listsFirst() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let stand = StandInAnalysis.judging(sensitive: false)
        let intake = stand.intake(place.vault)
        let released = try place.arrive("released.png", try Self.png(card: false, width: 100))
        try place.vault.store.allow(sha256: try Vault.sha256(path: released.path))
        #expect(await intake.handle(released, kind: .image, settings: settings(.adult)).isAllowed)
        let blocked = try place.arrive("blocked.png", try Self.png(card: false, width: 101))
        try place.vault.store.blockHash(try Vault.sha256(path: blocked.path), reason: "blocked by cli")
        guard case .hidden(_, .blocked, let reasons, let notice) = await intake.handle(blocked, kind: .image, settings: settings(.adult)) else {
            Issue.record("blocked bytes were not hidden"); return
        }
        #expect(reasons == ["blocked: on the block list: blocked by cli"] && notice.summary == "Hidden a photo you blocked before")
        #expect(stand.calls.withLock { $0 } == 0, "the lists decide without analysis")

        let first = try place.arrive("one.png", try Self.png(card: false, width: 102))
        guard case .clean = await intake.handle(first, kind: .image, settings: settings(.adult)) else { Issue.record("not clean"); return }
        let copy = try place.arrive("copy.png", try Self.png(card: false, width: 102))
        guard case .clean(let detail) = await intake.handle(copy, kind: .image, settings: settings(.adult)) else { Issue.record("not clean"); return }
        #expect(detail == "same bytes as a file found not sensitive before")
        #expect(stand.calls.withLock { $0 } == 1)
        // An adult's verdict is not a child's: analysed again in child mode.
        let childCopy = try place.arrive("child.png", try Self.png(card: false, width: 102))
        _ = await intake.handle(childCopy, kind: .image, settings: settings(.child))
        #expect(stand.calls.withLock { $0 } == 2)
    }

    @Test("a file that cannot be analysed: held as unverified in child mode, left and told in adult mode; a stop keeps it queued")
    func onError() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let failing = StandInAnalysis { path, _ in
            FileReport(path: path, kind: .image, type: .png, analysis: nil, failure: .init(code: "corrupt", message: "\(path): corrupt data"), elapsedMilliseconds: 1)
        }
        let child = try place.arrive("c.png", try Self.png(card: false, width: 110))
        guard case .hidden(_, .unverified, _, let held) = await failing.intake(place.vault).handle(child, kind: .image, settings: settings(.child)) else {
            Issue.record("not held"); return
        }
        #expect(held.summary == "We put a picture away to be safe")
        let adult = try place.arrive("a.png", try Self.png(card: false, width: 111))
        guard case .left(_, let notice) = await failing.intake(place.vault).handle(adult, kind: .image, settings: settings(.adult)) else {
            Issue.record("not left"); return
        }
        #expect(notice.summary == "Could not check a.png" && notice.body == "Corrupt data. It was left where it is.")
        #expect(FileManager.default.fileExists(atPath: adult.path))

        let stopped = StandInAnalysis { path, _ in
            FileReport(path: path, kind: .video, type: .mp4, analysis: nil, failure: .init(code: "cancelled", message: "cancelled"), elapsedMilliseconds: 1)
        }
        let video = try place.arrive("v.png", try Self.png(card: false, width: 112))
        for _ in 0..<4 {
            guard case .cancelled = await stopped.intake(place.vault).handle(video, kind: .video, settings: settings(.child)) else { Issue.record("not cancelled"); return }
        }
        #expect(try place.vault.store.backlogCount() == 1, "a stopped video waits for the next start")
        #expect(try place.vault.store.crashCount(video) == 0, "four stops are not four crashes")
    }

    @Test("crashes: a file that crashed the process twice is given up, recorded, and handled by on_error")
    func poisonFile() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try place.arrive("poison.png", try Self.png(card: false, width: 120))
        // Two crashes the crash journal recorded: the process died of a fatal signal in them.
        try place.vault.store.recordCrash(path: entry.path)
        try place.vault.store.recordCrash(path: entry.path)
        let stand = StandInAnalysis.judging(sensitive: false)
        guard case .givenUp(2, .hidden(_, .unverified, let reasons, _)) = await stand.intake(place.vault).handle(entry, kind: .image, settings: settings(.child)) else {
            Issue.record("not given up"); return
        }
        #expect(reasons.first?.contains("crashed the analysis 2 times") == true)
        #expect(stand.calls.withLock { $0 } == 0)
        #expect(try place.vault.store.events().contains { $0.kind == .error && $0.detail?.contains("given up") == true })
    }

    @Test("hard links: every name that appears is judged on its own, even when its inode was judged under another name")
    func everyNameIsJudged() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let stand = StandInAnalysis.judging(sensitive: true)
        let first = try place.arrive("first.png", try Self.png(card: false, width: 140))
        try place.vault.store.markSeen(SeenFile(path: first.path, identity: first.identity, sha256: nil, mode: .adult, verdict: .clean))
        let second = place.downloads.appendingPathComponent("second.png")
        #expect(link(first.path, second.path) == 0)
        let entry = BacklogEntry(path: second.path, root: place.downloads.path, direction: .incoming, identity: try MediaFile(path: second.path).identity)
        #expect(try place.vault.store.enqueue([entry], mode: .adult) == 1, "the second name was taken for the first")
        guard case .hidden = await stand.intake(place.vault).handle(entry, kind: .image, settings: settings(.adult)) else {
            Issue.record("the second name was not judged"); return
        }
        #expect(FileManager.default.fileExists(atPath: first.path), "the first name stays where it is")
    }

    @Test("rewritten in place with the same size and its old mtime put back: a new version, queued and judged again")
    func rewriteWithOldMtime() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let clean = try Self.png(card: false, width: 150)
        let entry = try place.arrive("photo.png", clean)
        guard case .clean = await StandInAnalysis.judging(sensitive: false).intake(place.vault).handle(entry, kind: .image, settings: settings(.adult)) else {
            Issue.record("not clean"); return
        }
        var before = Glibc.stat()
        lstat(entry.path, &before)
        // Other bytes of the same size, written into the same inode; then the mtime is put back.
        var other = clean
        other[other.count - 20] ^= 0xFF
        let fd = open(entry.path, O_WRONLY)
        _ = other.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        close(fd)
        var times = [before.st_atim, before.st_mtim]
        utimensat(AT_FDCWD, entry.path, &times, 0)
        let rewritten = BacklogEntry(path: entry.path, root: entry.root, direction: .incoming, identity: try MediaFile(path: entry.path).identity)
        #expect(rewritten.identity.modificationNanoseconds == entry.identity.modificationNanoseconds && rewritten.identity.size == entry.identity.size)
        #expect(try place.vault.store.enqueue([rewritten], mode: .adult) == 1, "taken for the version judged before")
        guard case .hidden = await StandInAnalysis.judging(sensitive: true).intake(place.vault).handle(rewritten, kind: .image, settings: settings(.adult)) else {
            Issue.record("not judged again"); return
        }
    }

    @Test("bytes swapped between hashing and analysis: no verdict is recorded for the hashed bytes")
    func swapBetweenHashAndAnalysis() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let card = try Self.png(card: true)
        let entry = try place.arrive("x.png", card)
        let cardHash = try Vault.sha256(path: entry.path)
        // A clean picture is renamed over the card while it is being analysed.
        let swapping = StandInAnalysis { path, settings in
            let other = path + ".clean"
            try? Data(try! Self.png(card: false, width: 130)).write(to: URL(fileURLWithPath: other))
            rename(other, path)
            return StandInAnalysis.judging(sensitive: false).answer(path, settings)
        }
        guard case .changed = await swapping.intake(place.vault).handle(entry, kind: .image, settings: settings(.adult)) else { Issue.record("not changed"); return }
        #expect(try place.vault.store.verdict(sha256: cardHash, mode: .adult) == nil, "the card's bytes were recorded as clean")
    }

    @Test("the real analyzer: the test card is hidden, a plain picture is left alone")
    func realAnalyzer() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let analyzer = try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 1), loading: .atFirstUse)
        let intake = Intake(vault: place.vault, engine: analyzer)
        let card = try place.arrive("card.png", try Self.png(card: true))
        guard case .hidden(let item, .quarantined, let reasons, _) = await intake.handle(card, kind: .image, settings: settings(.adult)) else {
            Issue.record("the card was not hidden"); return
        }
        #expect(reasons == ["TEST_CARD 1.00"])
        #expect(place.vault.previewPath(of: item).map { FileManager.default.fileExists(atPath: $0) } == true)
        let plain = try place.arrive("plain.png", try Self.png(card: false, width: 640, height: 480))
        guard case .clean = await intake.handle(plain, kind: .image, settings: settings(.adult)) else { Issue.record("a plain picture was not clean"); return }
        #expect(FileManager.default.fileExists(atPath: plain.path))
    }
}

extension Intake.Outcome {
    var isAllowed: Bool { if case .allowed = self { return true } else { return false } }
}

/// Resuming an interrupted video (issue 15): what Intake keeps, passes on and forgets. The
/// analysis here is a stand-in that reports progress and is interrupted on demand; the real
/// analysis's use of the stretches is tested in `CoarseToFineVideoTests`.
@Suite("Intake resumes videos")
struct IntakeResumeTests {
    @Test("an interrupted video's covered stretches are kept, handed to the next analysis of the same bytes, and forgotten after its verdict")
    func resumes() async throws {
        let place = try IntakeTests.Place(); defer { place.cleanUp() }
        let bytes = Array("not really a video, the stand-in does not read it".utf8)
        let entry = try place.arrive("long.mp4", bytes)
        let seen = Locked<[CoveredRanges?]>([])
        let interrupt = Locked(true)
        let intake = Intake(vault: place.vault, blocking: { _, work in try work() }, analysis: { path, settings, progress in
            seen.withLock { $0.append(settings.video.alreadyCovered) }
            var update = VideoProgress(fraction: 0.5, samples: 40, mediaTime: 300, duration: 600)
            update.covered = CoveredRanges([0...120, 200...260])
            progress(update)
            if interrupt.withLock({ $0 }) {
                return FileReport(path: path, kind: .video, type: .mp4, analysis: nil,
                                  failure: .init(code: MediaError.Code.cancelled.rawValue, message: "\(path): analysis was cancelled"), elapsedMilliseconds: 1)
            }
            return IntakeTests.StandInAnalysis.judging(sensitive: false).answer(path, settings)
        })
        var settings = Settings()
        settings.mode = .adult
        guard case .cancelled = await intake.handle(entry, kind: .video, settings: settings) else { Issue.record("not cancelled"); return }
        let sha = try Vault.sha256(path: entry.path)
        let basis = Intake.videoBasis(settings)
        #expect(try place.vault.store.videoProgress(sha256: sha, basis: basis) == [[0, 120], [200, 260]])
        // Another basis (child mode's policy, another gap) starts from nothing.
        var child = settings
        child.mode = .child
        #expect(try place.vault.store.videoProgress(sha256: sha, basis: Intake.videoBasis(child)).isEmpty)
        var wider = settings
        wider.video.maxGap = 4
        #expect(Intake.videoBasis(wider) != basis)

        interrupt.withLock { $0 = false }
        guard case .clean = await intake.handle(entry, kind: .video, settings: settings) else { Issue.record("not clean"); return }
        #expect(seen.withLock { $0 } == [nil, CoveredRanges([0...120, 200...260])])
        #expect(try place.vault.store.videoProgress(sha256: sha, basis: basis).isEmpty, "forgotten after the verdict")
        #expect(try place.vault.store.events().contains { $0.detail?.contains("video resumed: 180 s covered") == true })
    }
}

extension IntakeTests {
    @Test("a picture over the size limit is refused before it is hashed or analysed (a 64 GiB sparse PNG held a lane while read): on_error decides")
    func oversizedPictureIsNotRead() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try place.arrive("sparse.png", try Self.png(card: false))
        // A sparse tail: 3 MiB on paper, over a 1 MiB limit.
        #expect(truncate(entry.path, 3 << 20) == 0)
        let grown = BacklogEntry(path: entry.path, root: entry.root, direction: entry.direction, identity: try MediaFile(path: entry.path).identity)
        var adult = settings(.adult)
        adult.analyzer.limits.maxImageFileBytes = 1 << 20
        let stand = StandInAnalysis.judging(sensitive: false)
        let outcome = await stand.intake(place.vault).handle(grown, kind: .image, settings: adult)
        guard case .left(let reason, _) = outcome else { Issue.record("\(outcome)"); return }
        #expect(reason.contains("over the 1 MiB limit"), "\(reason)")
        #expect(stand.calls.withLock { $0 } == 0, "never analysed")
        var child = settings(.child)
        child.analyzer.limits.maxImageFileBytes = 1 << 20
        let again = try place.arrive("sparse2.png", try Self.png(card: false, width: 77))
        #expect(truncate(again.path, 3 << 20) == 0)
        let grown2 = BacklogEntry(path: again.path, root: again.root, direction: again.direction, identity: try MediaFile(path: again.path).identity)
        guard case .hidden(let item, .unverified, let reasons, _) = await stand.intake(place.vault).handle(grown2, kind: .image, settings: child) else {
            Issue.record("child mode did not hold it as unverified"); return
        }
        #expect(reasons.first?.contains("file_too_large") == true || reasons.first?.contains("limit") == true, "\(reasons)")
        // Nor does the vault read it to hash it (it did: three 64 GiB sparse PNGs kept the
        // guardian service's two threads hashing for over ten minutes, and nothing else ran).
        #expect(item.sha256.isEmpty, "moved without reading it: \(item.sha256)")
    }

    @Test("a video over the video limit (a 64 GiB sparse .mp4) is refused before it is hashed or analysed: child mode holds it as unverified unread, adult mode leaves it; one under the limit is analysed")
    func oversizedVideoIsNotRead() async throws {
        let place = try Place(); defer { place.cleanUp() }
        // The default limit (32 GiB) passes a 20 GB 4K video; 64 GiB of holes does not pass.
        #expect(Settings().analyzer.limits.maxVideoFileBytes == 32 << 30)
        let stand = StandInAnalysis.judging(sensitive: false)
        func sparse(_ name: String) throws -> BacklogEntry {
            let entry = try place.arrive(name, Array("....ftypisom".utf8) + [UInt8](repeating: 0, count: 4096))
            #expect(truncate(entry.path, 64 << 30) == 0)
            return BacklogEntry(path: entry.path, root: entry.root, direction: entry.direction, identity: try MediaFile(path: entry.path).identity)
        }
        let started = ContinuousClock.now
        let adult = await stand.intake(place.vault).handle(try sparse("huge.mp4"), kind: .video, settings: settings(.adult))
        guard case .left(let reason, _) = adult else { Issue.record("adult mode: \(adult)"); return }
        #expect(reason.contains("over the 32 GiB limit for videos"), "\(reason)")
        guard case .hidden(let item, .unverified, let reasons, _) = await stand.intake(place.vault).handle(try sparse("huge2.mp4"), kind: .video, settings: settings(.child)) else {
            Issue.record("child mode did not hold it as unverified"); return
        }
        #expect(reasons.first?.contains("limit for videos") == true, "\(reasons)")
        #expect(item.sha256.isEmpty, "moved without reading it: \(item.sha256)")
        #expect(stand.calls.withLock { $0 } == 0, "never analysed")
        // Reading 64 GiB takes minutes; refusing it takes moments.
        #expect(ContinuousClock.now - started < .seconds(10))
        // Under the limit (set lower here), a video is analysed as ever.
        var lower = settings(.adult)
        lower.analyzer.limits.maxVideoFileBytes = 1 << 30
        let small = try place.arrive("small.mp4", Array("....ftypisom".utf8) + [UInt8](repeating: 1, count: 4096))
        _ = await stand.intake(place.vault).handle(small, kind: .video, settings: lower)
        #expect(stand.calls.withLock { $0 } == 1, "a video under the limit is analysed")
    }

    @Test("the vault records the hash the judge took of the same version, without reading the file again")
    func judgedHashIsReused() throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try place.arrive("card.png", try Self.png(card: true))
        let identity = try MediaFile(path: entry.path).identity
        let claimed = String(repeating: "ab", count: 32)
        let item = try place.vault.quarantine(path: entry.path, expected: identity, reasons: ["x"], mode: .child, actor: "test", hash: .known(claimed))
        #expect(item.sha256 == claimed, "a known hash is not taken again")
        // Without the version it was taken of, a claimed hash is not trusted.
        let other = try place.arrive("card2.png", try Self.png(card: true, width: 91))
        let real = try Vault.sha256(path: other.path)
        let item2 = try place.vault.quarantine(path: other.path, expected: nil, reasons: ["x"], mode: .child, actor: "test", hash: .known(claimed))
        #expect(item2.sha256 == real)
    }
}
