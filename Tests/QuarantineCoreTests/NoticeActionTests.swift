import Foundation
import MediaDecoding
@testable import QuarantineStore
import SensitivityAnalysis
import Testing
import TestSupport
@testable import QuarantineCore
import Locking

/// The notification as an intervention: which buttons each mode offers, what each does through
/// the core's rules, and the wording of a file hidden because its site is blocked.
@Suite("Notice actions")
struct NoticeActionTests {
    @Test("adult mode offers Show preview, Put back and Delete; child mode only Get help; keys round-trip and nothing else parses")
    func offered() {
        let adult = Notice.hidden(id: 7, kind: .image, mode: .adult)
        #expect(adult.actions == [.showPreview(7), .putBack(7), .delete(7)])
        #expect(adult.actions.map(\.label) == ["Show preview", "Put back", "Delete"])
        #expect(Notice.held(id: 7, kind: .video, mode: .adult).actions == [.showPreview(7), .putBack(7), .delete(7)])
        for notice in [Notice.hidden(id: 7, kind: .image, mode: .child), .held(id: 7, kind: .image, mode: .child),
                       .hidden(id: 7, kind: .video, mode: .child, because: .blockedSite)] {
            #expect(notice.actions == [.getHelp], "child mode never offers the file back")
        }
        for action in [Notice.Action.showPreview(12), .putBack(12), .delete(12), .getHelp] {
            #expect(Notice.Action(key: action.key) == action)
        }
        for key in ["default", "put-back-", "put-back-x", "delete--3", "delete-0", "preview-12 ", "show-3", ""] {
            #expect(Notice.Action(key: key) == nil, "\(key)")
        }
    }

    @Test("a file hidden because its site is blocked says so, in both modes; blocked bytes say 'before'")
    func blockedWording() {
        #expect(Notice.hidden(id: 1, kind: .image, mode: .adult, because: .blockedSite).summary == "Hidden a photo from a site you blocked")
        #expect(Notice.hidden(id: 1, kind: .video, mode: .adult, because: .blockedBytes).summary == "Hidden a video you blocked before")
        let child = Notice.hidden(id: 1, kind: .image, mode: .child, because: .blockedSite)
        #expect(child.body.hasPrefix("A picture from a website that is blocked arrived."), "\(child.body)")
        #expect(!child.body.contains("private parts"), "a blocked site's file was not judged")
    }

    @Test("Show preview opens a copy of the blurred preview in a folder of previews only; Put back and Delete act in adult mode and are refused in child mode")
    func perform() throws {
        let place = try IntakeTests.Place(); defer { place.cleanUp() }
        let file = place.downloads.appendingPathComponent("a.png")
        try Data(try IntakeTests.png(card: true)).write(to: file)
        let item = try place.vault.quarantine(path: file.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .adult, actor: "test",
                                              preview: TestCard.render(width: 320, height: 240))
        let id = try #require(item.id)
        let viewing = place.folder.appendingPathComponent("view").path
        let adult = Review(vault: place.vault, mode: ModeInForce(mode: .adult), actor: "notification")

        guard case .open(let copy) = try adult.perform(.showPreview(id), viewingFolder: viewing, helpPage: nil) else { Issue.record("not opened"); return }
        #expect(copy == viewing + "/quarantine-item-\(id)-preview.jpg")
        #expect(FileManager.default.contents(atPath: copy) == FileManager.default.contents(atPath: place.vault.previewPath(of: item)!))
        #expect(try FileManager.default.contentsOfDirectory(atPath: viewing) == ["quarantine-item-\(id)-preview.jpg"], "nothing but previews beside it")
        var info = stat()
        #expect(stat(viewing, &info) == 0 && info.st_mode & 0o777 == 0o700)

        guard case .open(let page) = try adult.perform(.getHelp, viewingFolder: viewing, helpPage: nil) else { Issue.record("no help"); return }
        #expect(try String(contentsOfFile: page, encoding: .utf8).contains("116 111"))
        guard case .open(let custom) = try adult.perform(.getHelp, viewingFolder: viewing, helpPage: "https://help.example/") else { Issue.record("no help"); return }
        #expect(custom == "https://help.example/")

        // Child mode: the click is no PIN.
        try GuardianPIN(store: place.vault.store).set("2468", rounds: GuardianPIN.testRounds)
        let child = Review(vault: place.vault, mode: ModeInForce(mode: .child), actor: "notification")
        #expect(throws: Review.Refusal.self) { _ = try child.perform(.putBack(id), viewingFolder: viewing, helpPage: nil) }
        #expect(throws: Review.Refusal.self) { _ = try child.perform(.delete(id), viewingFolder: viewing, helpPage: nil) }
        #expect(!FileManager.default.fileExists(atPath: file.path))

        guard case .putBack(let release) = try adult.perform(.putBack(id), viewingFolder: viewing, helpPage: nil) else { Issue.record("not put back"); return }
        #expect(release.path == file.path && FileManager.default.fileExists(atPath: file.path))
        #expect(try adult.history(of: id).first?.actor == "notification")
        #expect(throws: Review.Refusal.self) { _ = try adult.perform(.showPreview(id), viewingFolder: viewing, helpPage: nil) }

        let again = try place.vault.quarantine(path: file.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .adult, actor: "test", preview: nil)
        guard case .deleted = try adult.perform(.delete(again.id!), viewingFolder: viewing, helpPage: nil) else { Issue.record("not deleted"); return }
        #expect(try place.vault.store.blockReason(sha256: again.sha256) != nil, "Delete blocks its bytes")
        #expect(try place.vault.store.items().isEmpty)
    }

    @Test("previews are never copied into a folder that is a link or open to others")
    func privateFolderOnly() throws {
        let place = try IntakeTests.Place(); defer { place.cleanUp() }
        let open = place.folder.appendingPathComponent("open").path
        mkdir(open, 0o755)
        chmod(open, 0o755)
        #expect(throws: Review.Refusal.self) { _ = try Review.privateFolder(open) }
        let link = place.folder.appendingPathComponent("link").path
        let target = place.folder.appendingPathComponent("target").path
        mkdir(target, 0o700)
        symlink(target, link)
        #expect(throws: Review.Refusal.self) { _ = try Review.privateFolder(link) }
        #expect(try Review.privateFolder(target) == target)
    }

    @Test("a file hidden on sight because its site is blocked still gets a blurred preview, decoded from the vault's copy, and says why")
    func blockedSiteGetsPreview() async throws {
        let place = try IntakeTests.Place(); defer { place.cleanUp() }
        let analyzer = try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 1), loading: .atFirstUse)
        let intake = Intake(vault: place.vault, engine: analyzer)
        try place.vault.store.blockOrigin("blocked.example")
        let entry = try place.arrive("from-site.png", try IntakeTests.png(card: false, width: 200, height: 150))
        try FFmpegTool.setExtendedAttribute(entry.path, "user.xdg.origin.url", "https://blocked.example/x.png")
        var settings = Settings(); settings.mode = .adult
        guard case .hidden(let item, .blocked, _, let notice) = await intake.handle(entry, kind: .image, settings: settings) else {
            Issue.record("not hidden on sight"); return
        }
        #expect(notice.summary == "Hidden a photo from a site you blocked")
        let preview = try #require(place.vault.previewPath(of: item))
        #expect(FileManager.default.fileExists(atPath: preview))
        #expect(try place.vault.store.item(item.id!)?.previewName == "preview.jpg", "recorded")
    }
}

/// Where a download came from, when the file does not say: the browsers' history, looked up by
/// the path the file arrived at. A stand-in lookup here; `DownloadOriginsTests` reads real schemas.
@Suite("Download origins in the intake")
struct OriginIntakeTests {
    @Test("the history's URL and page are recorded with the hidden item; a block of its site then hides the next download from it on sight; xattrs win; off means no lookup")
    func lookedUp() async throws {
        let place = try IntakeTests.Place(); defer { place.cleanUp() }
        let asked = Locked<[String]>([])
        var intake = IntakeTests.StandInAnalysis.judging(sensitive: true).intake(place.vault)
        intake.originLookup = { path in
            asked.withLock { $0.append(path) }
            return DownloadSource(url: "https://Pics.Example/files/\(URL(fileURLWithPath: path).lastPathComponent)", referrer: "https://pics.example/page", source: "Firefox")
        }
        var settings = Settings()
        settings.mode = .adult
        let first = try place.arrive("first.png", try IntakeTests.png(card: false, width: 110))
        guard case .hidden(let item, .quarantined, _, _) = await intake.handle(first, kind: .image, settings: settings) else { Issue.record("not hidden"); return }
        #expect(item.originURL == "https://Pics.Example/files/first.png" && item.referrerURL == "https://pics.example/page")
        #expect(asked.withLock { $0 } == [first.path])
        let block = try place.vault.block(id: item.id!, keep: false, origin: true, mode: .adult, actor: "test")
        #expect(block.blockedHost == "pics.example")

        let second = try place.arrive("second.png", try IntakeTests.png(card: false, width: 111))
        guard case .hidden(_, .blocked, let reasons, let notice) = await intake.handle(second, kind: .image, settings: settings) else { Issue.record("not blocked"); return }
        #expect(reasons == ["blocked: downloaded from pics.example, which is blocked"])
        #expect(notice.summary == "Hidden a photo from a site you blocked")

        // The file's own attribute (wget, curl --xattr) wins: no lookup.
        let third = try place.arrive("third.png", try IntakeTests.png(card: false, width: 112))
        try FFmpegTool.setExtendedAttribute(third.path, "user.xdg.origin.url", "https://other.example/third.png")
        guard case .hidden(let own, .quarantined, _, _) = await intake.handle(third, kind: .image, settings: settings) else { Issue.record("not hidden"); return }
        #expect(own.originURL == "https://other.example/third.png" && own.referrerURL == nil)
        #expect(asked.withLock { $0.count } == 2)

        // agent.browser_history = false: never asked.
        settings.agent.browserHistory = false
        let fourth = try place.arrive("fourth.png", try IntakeTests.png(card: false, width: 113))
        guard case .hidden(let unknown, .quarantined, _, _) = await intake.handle(fourth, kind: .image, settings: settings) else { Issue.record("not hidden"); return }
        #expect(unknown.originURL == nil && asked.withLock { $0.count } == 2)
    }

    @Test("a browser that writes its history seconds later (Chromium): a clean file is left only once its origin is known, when some site is blocked, and hidden if that site is; a hidden one gets its origin recorded afterwards; nothing is awaited when no site is blocked")
    func foundLater() async throws {
        let place = try IntakeTests.Place(); defer { place.cleanUp() }
        let calls = Locked(0)
        var intake = IntakeTests.StandInAnalysis.judging(sensitive: false).intake(place.vault)
        // Stand-in history: knows a download from the second question on, as Chromium's commit does.
        intake.originLookup = { _ in
            let n = calls.withLock { $0 += 1; return $0 }
            return n >= 2 ? DownloadSource(url: "https://late.example/x.png", referrer: nil, source: "Chromium") : nil
        }
        intake.originMayFollow = { _, _ in true }
        intake.originWait = .seconds(60)
        var settings = Settings()
        settings.mode = .adult

        // No site blocked: the origin could change nothing for a clean file, so the history is
        // not even asked (a lookup copies the browsers' databases), and nothing waits.
        let plain = try place.arrive("plain.png", try IntakeTests.png(card: false, width: 120))
        guard case .clean = await intake.handle(plain, kind: .image, settings: settings) else { Issue.record("not clean"); return }
        #expect(calls.withLock { $0 } == 0)

        try place.vault.store.blockOrigin("late.example")
        calls.withLock { $0 = 0 }
        let benign = try place.arrive("benign.png", try IntakeTests.png(card: false, width: 121))
        guard case .hidden(let item, .blocked, let reasons, let notice) = await intake.handle(benign, kind: .image, settings: settings) else {
            Issue.record("a clean file from a blocked site was left"); return
        }
        #expect(reasons == ["blocked: downloaded from late.example, which is blocked"] && notice.summary == "Hidden a photo from a site you blocked")
        #expect(item.originURL == "https://late.example/x.png")

        // Hidden by analysis before its origin was known: recorded once the history has it.
        let flagging = IntakeTests.StandInAnalysis.judging(sensitive: true)
        var second = flagging.intake(place.vault)
        second.originLookup = intake.originLookup
        second.originMayFollow = { _, _ in true }
        second.originWait = .seconds(60)
        calls.withLock { $0 = 0 }
        let card = try place.arrive("card.png", try IntakeTests.png(card: false, width: 122))
        guard case .hidden(let hidden, .quarantined, _, _) = await second.handle(card, kind: .image, settings: settings) else { Issue.record("not hidden"); return }
        #expect(hidden.originURL == nil)
        #expect(await second.followOrigin(of: hidden, arrivedAt: card.path, settings: settings)?.url == "https://late.example/x.png")
        let recorded = try #require(try place.vault.store.item(hidden.id!))
        #expect(recorded.originURL == "https://late.example/x.png")
        #expect(recorded.reasonList == ["open_nsfw 0.90", "blocked: downloaded from late.example, which is blocked"], "its blocked site is a reason too")
        #expect(try place.vault.store.events(itemId: hidden.id).first?.detail?.contains("Chromium's download history") == true)
        #expect(await second.followOrigin(of: recorded, arrivedAt: card.path, settings: settings) == nil, "recorded once")
    }
}
