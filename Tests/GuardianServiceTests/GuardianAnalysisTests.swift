import Foundation
import GuardianAPI
import Locking
import Logging
import MediaDecoding
import AccountPipeline
import QuarantineAgent
import QuarantineCore
import SensitivityAnalysis
import ServiceSupport
import Testing
import TestSupport
@testable import GuardianService

/// The guardian socket's `analyze` verb (issue 31): the protected account's session forwarder
/// passes one descriptor, the service judges it with the account's engine under its policy.
/// The engine is a stand-in (named so) that reads the passed bytes: the point is the socket's
/// rules for descriptors, the answers, the bounds and cancelling.
@Suite("GuardianAnalysis: the analyze verb on the guardian socket", .serialized)
struct GuardianAnalysisTests {
    /// A stand-in engine: bytes containing "CARD" are sensitive (a test-card box), "SLOW" waits
    /// until cancelled (at most 20 s); a video reports progress three times. Records the modes
    /// it was asked under and the analyses cancelled.
    final class MarkerEngine: AnalysisEngine {
        let modes = Locked<[AnalysisMode]>([])
        let cancelled = Locked(0)
        let started = Locked(0)
        /// Analyses under way now, and the most there ever were at once.
        let running = Locked((now: 0, most: 0))
        var workers: Int { 2 }
        var problem: String? { nil }

        func runBlocking<T: Sendable>(video: Bool, _ work: @escaping @Sendable () throws -> T) async throws -> T {
            try await offPool("marker-engine", work)
        }

        func report(forFileAt path: String, settings: Settings, progress: @escaping @Sendable (VideoProgress) -> Void) async -> FileReport {
            modes.withLock { $0.append(settings.mode) }
            started.withLock { $0 += 1 }
            running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
            defer { running.withLock { $0.now -= 1 } }
            guard let file = try? MediaFile(path: path) else {
                return FileReport(path: path, kind: .image, type: .png, analysis: nil, failure: .init(code: "unreadable", message: "\(path): cannot open"), elapsedMilliseconds: 1)
            }
            var bytes = [UInt8](repeating: 0, count: 4096)
            let count = pread(file.descriptor, &bytes, bytes.count, 0)
            let text = String(decoding: bytes.prefix(max(0, count)), as: UTF8.self)
            if text.contains("SLOW") {
                for _ in 0..<1000 where !Task.isCancelled { try? await Task.sleep(for: .milliseconds(20)) }
                if Task.isCancelled { cancelled.withLock { $0 += 1 } }
            }
            let video = settings.video.allFlaggedRanges
            if video {
                for step in 1...3 {
                    progress(VideoProgress(fraction: Double(step) / 3, samples: step, mediaTime: Double(step), duration: 3))
                    try? await Task.sleep(for: .milliseconds(300))
                }
            }
            let sensitive = text.contains("CARD")
            var analysis = SensitivityAnalysis(path: path, kind: video ? .video : .image, type: .png, isSensitive: sensitive,
                                               detections: sensitive ? [Detection(label: TestCard.label, score: 1, box: Box(x: 1, y: 2, width: 3, height: 4))] : [],
                                               nsfwScore: nil, reasons: sensitive ? ["\(TestCard.label) 1.00"] : [], mode: settings.mode, width: 8, height: 8,
                                               identity: file.identity, elapsedMilliseconds: 1)
            if video && sensitive {
                analysis.frameTime = 1.5
                analysis.flaggedRanges = [[1.5, 2.0]]
            }
            return FileReport(path: path, kind: analysis.kind, type: .png, analysis: analysis, failure: nil, elapsedMilliseconds: 1)
        }

        func previewFrame(forFileAt path: String) async -> RGBImage? { nil }
    }

    /// A guardian server for "kid" with the stand-in engine in child mode.
    static func place(engine: MarkerEngine, maxInFlight: Int = 4) throws -> GuardianServerTests.Place {
        let analysis = GuardianAnalysis(maxInFlight: maxInFlight, logger: Logger(label: "test")) {
            (engine, Settings(mode: .child), nil)
        }
        return try GuardianServerTests.Place(analysis: analysis)
    }

    /// A small PNG followed by `marker` (the type is still PNG), in a file of `folder`.
    static func picture(_ folder: URL, _ name: String, marker: String = "") throws -> String {
        let path = folder.appendingPathComponent(name).path
        let png = try PNGEncoder.encode(RGBImage(width: 8, height: 8, filledWith: (10, 20, 30)))
        try Data(png + Array(marker.utf8)).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// `analyze` as `uid` on a connection of its own, off Swift's pool (the analysis runs on it).
    static func analyze(_ place: GuardianServerTests.Place, as uid: uid_t = GuardianServerTests.childUID, _ kind: GuardianWire.Analyze.Kind, fd: Int32,
                        progress: @escaping @Sendable (VideoProgress) -> Void = { _ in }) async throws -> Result<GuardianWire.Analyze.Verdict, GuardianClient.AnalyzeError> {
        try await offPool { try place.connect(as: uid).analyze(kind, fd: fd, progress: progress) }
    }

    /// The descriptors this process holds now.
    /// The descriptors of this process open on one of `files` (device and inode): counting all
    /// of the process's descriptors instead raced with the tests beside this one (190 > 182 at
    /// eight tests at once).
    static func descriptors(on files: Set<[UInt64]>) -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.compactMap(Int32.init).filter { fd in
            var info = stat()
            return fstat(fd, &info) == 0 && files.contains([UInt64(info.st_dev), UInt64(info.st_ino)])
        }
    }

    /// ``descriptors(on:)`` once the service has had up to 2 s to close what it was given.
    static func descriptorsLeft(on files: Set<[UInt64]>) async throws -> [Int32] {
        var left = descriptors(on: files)
        for _ in 0..<100 where !left.isEmpty { try await Task.sleep(for: .milliseconds(20)); left = descriptors(on: files) }
        return left
    }

    @Test("the child's picture and video are judged under the child's policy; answers carry the verdict, boxes, a video's progress and ranges")
    func picturesAndVideosJudged() async throws {
        let engine = MarkerEngine()
        let place = try Self.place(engine: engine); defer { place.cleanUp() }
        let clean = open(try Self.picture(place.folder, "clean.png"), O_RDONLY); defer { close(clean) }
        let card = open(try Self.picture(place.folder, "card.png", marker: "CARD"), O_RDONLY); defer { close(card) }

        let cleanVerdict = try await Self.analyze(place, .image, fd: clean).get()
        #expect(!cleanVerdict.sensitive && cleanVerdict.reasons.isEmpty && cleanVerdict.boxes.isEmpty)
        let cardVerdict = try await Self.analyze(place, .image, fd: card).get()
        #expect(cardVerdict.sensitive && cardVerdict.reasons == ["\(TestCard.label) 1.00"])
        #expect(cardVerdict.boxes == [.init(label: TestCard.label, score: 1, x: 1, y: 2, width: 3, height: 4)])

        let updates = Locked<[Double]>([])
        let video = try await Self.analyze(place, .video, fd: card) { progress in
            updates.withLock { $0.append(progress.fraction ?? -1) }
        }.get()
        #expect(video.sensitive && video.flaggedTime == 1.5 && video.flaggedRanges == [[1.5, 2.0]])
        #expect(updates.withLock { $0.count } >= 2, "progress came as it went: \(updates.withLock { $0 })")
        #expect(engine.modes.withLock { $0 } == [.child, .child, .child])
        // Bytes that are not a picture: the agent's NotAPicture.
        let textPath = place.folder.appendingPathComponent("t.txt")
        try Data("hello".utf8).write(to: textPath)
        let text = open(textPath.path, O_RDONLY)
        defer { close(text) }
        guard case .failure(.failed(let notPicture)) = try await Self.analyze(place, .image, fd: text) else {
            Issue.record("text judged as a picture"); return
        }
        #expect(notPicture.kind == .notAPicture)
    }

    @Test("refused before a byte is read, and closed: a FIFO, O_PATH, write-only, /dev/zero, a folder, a socket, a sparse file over the bound")
    func hostileDescriptorsRefused() async throws {
        let engine = MarkerEngine()
        let place = try Self.place(engine: engine); defer { place.cleanUp() }
        let picture = try Self.picture(place.folder, "p.png")
        let sparse = place.folder.appendingPathComponent("sparse.png").path
        let big = open(sparse, O_RDWR | O_CREAT, 0o600)
        #expect(ftruncate(big, off_t(MediaLimits.default.maxImageFileBytes) + 1) == 0)
        close(big)
        let hugeVideo = place.folder.appendingPathComponent("huge.mp4").path
        let huge = open(hugeVideo, O_RDWR | O_CREAT, 0o600)
        #expect(ftruncate(huge, off_t(DescriptorJudge.maxVideoBytes) + 1) == 0)
        close(huge)
        let fifo = try GuardianServerTests.pipeEnds()
        let (socketEnd, otherEnd) = try LocalSocket.pair()
        let cases: [(String, GuardianWire.Analyze.Kind, Int32, GuardianWire.Analyze.Failure.Kind)] = [
            ("a FIFO", .image, fifo.read, .invalidDescriptor),
            ("O_PATH", .image, open(picture, DescriptorJudge.openPathFlag | O_CLOEXEC), .invalidDescriptor),
            ("write-only", .image, open(picture, O_WRONLY), .invalidDescriptor),
            ("/dev/zero", .image, open("/dev/zero", O_RDONLY), .invalidDescriptor),
            ("a folder", .image, open(place.folder.path, O_RDONLY | O_DIRECTORY), .invalidDescriptor),
            ("a socket", .video, socketEnd.descriptor, .notAVideo),
            ("a sparse picture over 256 MiB", .image, open(sparse, O_RDONLY), .limitsExceeded),
            ("a sparse video over 8 GiB", .video, open(hugeVideo, O_RDONLY), .limitsExceeded),
        ]
        // What was given, by device and inode (the FIFO's write end shares its pipe's inode);
        // /dev/zero left out, which anything else in the process may have open.
        let given = Set(cases.compactMap { name, _, fd, _ -> [UInt64]? in
            var info = stat()
            guard name != "/dev/zero", fstat(fd, &info) == 0 else { return nil }
            return [UInt64(info.st_dev), UInt64(info.st_ino)]
        })
        for (name, kind, fd, wanted) in cases {
            #expect(fd >= 0, "\(name): \(errno)")
            let outcome = try await Self.analyze(place, kind, fd: fd)
            guard case .failure(.failed(let failure)) = outcome else { Issue.record("\(name): \(outcome)"); continue }
            #expect(failure.kind == wanted, "\(name): \(failure)")
        }
        #expect(engine.started.withLock { $0 } == 0, "the engine was asked")
        // The FIFO's write end sees no reader left: the service closed the read end it was given.
        close(fifo.read)
        #expect(await GuardianServerTests.readEndsAllClosed(fifo.write), "the FIFO passed is still open in the service")
        close(fifo.write)
        for (name, _, fd, _) in cases where name != "a FIFO" && name != "a socket" { close(fd) }
        socketEnd.close(); otherEnd.close()
        // Every descriptor the service was given is closed: none in the process is open on what
        // the cases were (the test's own are closed above).
        let left = try await Self.descriptorsLeft(on: given)
        #expect(left.isEmpty, "descriptors left open in the process on what was given: \(left)")
    }

    @Test("while nothing can analyse: refused as unavailable with the reason, the descriptor closed; a descriptor that is no file is still refused as such")
    func unavailableWithoutEngine() async throws {
        let analysis = GuardianAnalysis(logger: Logger(label: "test")) { (nil, Settings(mode: .child), "a model is missing") }
        let place = try GuardianServerTests.Place(analysis: analysis); defer { place.cleanUp() }
        let fifo = try GuardianServerTests.pipeEnds()
        guard case .failure(.failed(let failure)) = try await Self.analyze(place, .image, fd: fifo.read) else {
            Issue.record("a FIFO was taken while nothing can analyse"); return
        }
        #expect(failure.kind == .invalidDescriptor, "\(failure)")
        close(fifo.read)
        #expect(await GuardianServerTests.readEndsAllClosed(fifo.write), "the FIFO passed is still open in the service")
        close(fifo.write)
        let picture = try Self.picture(place.folder, "p.png")
        let fd = open(picture, O_RDONLY)
        var info = stat()
        #expect(fstat(fd, &info) == 0)
        let given: Set<[UInt64]> = [[UInt64(info.st_dev), UInt64(info.st_ino)]]
        let outcome = try await Self.analyze(place, .image, fd: fd)
        close(fd)
        guard case .failure(.failed(let unavailable)) = outcome else { Issue.record("judged without an engine: \(outcome)"); return }
        #expect(unavailable.kind == .unavailable && "\(unavailable)".contains("a model is missing"), "\(unavailable)")
        let left = try await Self.descriptorsLeft(on: given)
        #expect(left.isEmpty, "the service kept the descriptor it was given: \(left)")
        #expect(analysis.inFlight == 0)
    }

    @Test("only the protected account, only with exactly one descriptor: a guardian's, a stranger's and extra descriptors are closed and refused")
    func onlyTheChildWithOne() async throws {
        let engine = MarkerEngine()
        let place = try Self.place(engine: engine); defer { place.cleanUp() }
        let request = GuardianProtocol.encode(GuardianWire.Analyze(kind: .image))
        for (uid, count, words) in [(GuardianServerTests.guardianUID, 1, "only kid can do this"), (GuardianServerTests.strangerUID, 1, "only kid, root"),
                                    (0, 1, "only kid can do this"), (GuardianServerTests.childUID, 2, "exactly one open descriptor"),
                                    (GuardianServerTests.childUID, 16, "exactly one open descriptor"), (GuardianServerTests.childUID, 40, "tooLong"), (GuardianServerTests.childUID, 0, "exactly one open descriptor")] {
            let pipe = try GuardianServerTests.pipeEnds(); defer { close(pipe.read) }
            let socket = try place.rawConnection(as: uid)
            _ = GuardianServerTests.sendRaw(socket.descriptor, request, descriptors: [Int32](repeating: pipe.write, count: count))
            close(pipe.write)
            let readEnd = pipe.read
            #expect(await offPool { GuardianServerTests.writeEndsAllClosed(readEnd) }, "uid \(uid), \(count) descriptor(s): still open in the service")
            let text = await offPool {
                var text = ""
                for _ in 0..<2 {
                    guard let message = try? socket.receive() else { continue }
                    text += String(decoding: message.bytes, as: UTF8.self)
                    if !text.isEmpty { break }
                }
                return text
            }
            #expect(text.contains(words), "uid \(uid), \(count) descriptor(s): \(text)")
        }
        #expect(engine.started.withLock { $0 } == 0)
    }

    @Test("at most so many analyses at once; a slow one holds no handler (a guardian is answered at once); a client that leaves cancels its analysis")
    func boundedAndCancelled() async throws {
        let engine = MarkerEngine()
        let place = try Self.place(engine: engine, maxInFlight: 2); defer { place.cleanUp() }
        let slow = open(try Self.picture(place.folder, "slow.png", marker: "SLOW"), O_RDONLY); defer { close(slow) }
        let clients = try (0..<2).map { _ in try place.connect(as: GuardianServerTests.childUID) }
        let waits = clients.map { client in
            Task { try? await offPool { try client.analyze(.image, fd: slow) } }
        }
        for _ in 0..<200 where engine.started.withLock({ $0 }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(engine.started.withLock { $0 } == 2)
        // A third is refused at once; every handler thread is free for everyone else.
        guard case .failure(.failed(let busy)) = try await Self.analyze(place, .image, fd: slow) else {
            Issue.record("a third analysis was taken"); return
        }
        #expect(busy.kind == .limitsExceeded)
        let started = ContinuousClock.now
        for _ in 0..<8 {
            let client = try place.connect(as: GuardianServerTests.guardianUID)
            #expect(await offPool { GuardianServerTests.outcome(client, GuardianWire.Hello()) } == nil)
        }
        #expect(ContinuousClock.now - started < .seconds(2))
        // The clients leave: the service cancels both analyses and frees their places.
        clients.forEach { $0.cancel() }
        for wait in waits { _ = await wait.value }
        for _ in 0..<200 where engine.cancelled.withLock({ $0 }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(engine.cancelled.withLock { $0 } == 2)
        let clean = open(try Self.picture(place.folder, "after.png"), O_RDONLY); defer { close(clean) }
        #expect((try? await Self.analyze(place, .image, fd: clean).get())?.sensitive == false)
    }

    @Test("a flood of requests from many clients at once: never more analyses than the bound, each request judged or refused (busy, or too many connections), and every place given back")
    func floodKeepsTheBound() async throws {
        let engine = MarkerEngine()
        let place = try Self.place(engine: engine, maxInFlight: 2); defer { place.cleanUp() }
        let path = try Self.picture(place.folder, "brief.png")
        let others = Locked<[String]>([])
        let outcomes = await withTaskGroup(of: (judged: Int, busy: Int, other: Int).self) { group in
            for _ in 0..<6 {
                group.addTask {
                    var counts = (judged: 0, busy: 0, other: 0)
                    for _ in 0..<40 {
                        let fd = open(path, O_RDONLY)
                        defer { close(fd) }
                        let outcome: String
                        do {
                            switch try await Self.analyze(place, .image, fd: fd) {
                            case .success: counts.judged += 1; continue
                            case .failure(.failed(let failure)) where failure.kind == .limitsExceeded: counts.busy += 1; continue
                            // A client that reconnects before the service has closed its last
                            // connection can meet the bound on connections (8 an account).
                            case .failure(.refused(let refusal)) where "\(refusal)".contains("too many connections"): counts.busy += 1; continue
                            case .failure(let failure): outcome = "\(failure)"
                            }
                        } catch {
                            outcome = "thrown: \(error)"
                        }
                        counts.other += 1
                        others.withLock { $0.append(outcome) }
                    }
                    return counts
                }
            }
            return await group.reduce(into: (judged: 0, busy: 0, other: 0)) { $0.judged += $1.judged; $0.busy += $1.busy; $0.other += $1.other }
        }
        #expect(outcomes.judged + outcomes.busy == 240 && outcomes.other == 0 && outcomes.judged > 0, "\(outcomes): \(others.withLock { $0 })")
        #expect(engine.running.withLock { $0.most } <= 2, "\(engine.running.withLock { $0 })")
        // Every place was given back: the next two are judged at once, side by side.
        let fd = open(path, O_RDONLY); defer { close(fd) }
        async let first = Self.analyze(place, .image, fd: fd)
        async let second = Self.analyze(place, .image, fd: fd)
        let (a, b) = (try await first, try await second)
        #expect((try? a.get()) != nil && (try? b.get()) != nil, "\(a) \(b)")
        print("guardian analyze flood: \(outcomes), most at once \(engine.running.withLock { $0.most })")
    }

    /// The child's session forwarder ("kid", child mode) on a private session bus, asking the
    /// service of `place` as the child: what the forwarder tests of this suite and of
    /// GuardianStreamTests start. `environment` reaches that bus (with a PATH for the clients).
    final class ForwarderOnPrivateBus {
        let bus: PrivateSessionBus
        let served: GuardedAnalysisBus
        var environment: [String: String] { bus.environment.merging(["PATH": "/usr/bin:/bin"]) { $1 } }

        init(_ place: GuardianServerTests.Place) throws {
            bus = try PrivateSessionBus()
            do {
                served = try GuardedAnalysisBus.start(address: bus.address, user: "kid", logger: Logger(label: "test"), askMode: { _ in .child },
                                                      connect: { try place.connect(as: GuardianServerTests.childUID) })
            } catch {
                bus.stop()
                throw error
            }
        }

        func stop() {
            served.stop()
            bus.stop()
        }
    }

    // MARK: - The session forwarder

    @Test("the session forwarder answers AnalyzeImage and AnalyzeVideo through the guardian service, in the agent's shapes")
    func forwarderOnAPrivateBus() async throws {
        let engine = MarkerEngine()
        let place = try Self.place(engine: engine); defer { place.cleanUp() }
        let forwarder = try ForwarderOnPrivateBus(place); defer { forwarder.stop() }
        let card = try Self.picture(place.folder, "card.png", marker: "CARD")
        let environment = forwarder.environment
        func gdbus(_ arguments: String) async throws -> (out: String, err: String) {
            let result = try await offPool {
                try Spawned.run("/bin/sh", ["-c", "gdbus call --session --dest \(AnalysisBus.busName) " + arguments], environment: environment, timeout: 20)
            }
            return (String(decoding: result.stdout, as: UTF8.self), String(decoding: result.stderr, as: UTF8.self))
        }
        let image = try await gdbus("--object-path \(AnalysisBus.objectPath) --method \(AnalysisBus.interface).AnalyzeImage 3 3<'\(card)'")
        #expect(image.out.hasPrefix("(true, ['\(TestCard.label) 1.00'], [('\(TestCard.label)', 1.0, 1.0, 2.0, 3.0, 4.0)], "), "\(image)")
        let zero = try await gdbus("--object-path \(AnalysisBus.objectPath) --method \(AnalysisBus.interface).AnalyzeImage 3 3</dev/zero")
        #expect(zero.err.contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(zero)")
        // A video job (one connection: a job is seen by its caller only): its object at once, its
        // Progress signals, then Finished, and its Result property.
        let client = """
        import os, sys
        from gi.repository import Gio, GLib
        bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
        name, root, iface = "\(AnalysisBus.busName)", "\(AnalysisBus.objectPath)", "\(AnalysisBus.interface)"
        fds = Gio.UnixFDList.new(); fds.append(os.open(sys.argv[1], os.O_RDONLY))
        reply, _ = bus.call_with_unix_fd_list_sync(name, root, iface, "AnalyzeVideo", GLib.Variant("(h)", (0,)), GLib.VariantType("(o)"), 0, 10000, fds, None)
        path = reply.unpack()[0]
        print("path", path)
        loop = GLib.MainLoop()
        seen = []
        def signal(conn, sender, obj, interface, member, params):
            seen.append(member)
            if member in ("Finished", "Failed"):
                print(member, params.unpack()); loop.quit()
        bus.signal_subscribe(name, iface + ".VideoJob", None, path, None, 0, signal)
        GLib.timeout_add(15000, loop.quit)
        loop.run()
        result = bus.call_sync(name, path, "org.freedesktop.DBus.Properties", "Get", GLib.Variant("(ss)", (iface + ".VideoJob", "Result")), None, 0, 5000, None)
        print("result", result.unpack()[0])
        print("progress signals", seen.count("Progress"))
        """
        let script = forwarder.bus.directory.appendingPathComponent("video.py").path
        try client.write(toFile: script, atomically: true, encoding: .utf8)
        let video = try await offPool { try Spawned.run("/usr/bin/python3", [script, card], environment: environment, timeout: 30) }
        let lines = String(decoding: video.stdout, as: UTF8.self)
        #expect(lines.contains("path \(AnalysisBus.objectPath)/video/"), "\(lines) \(String(decoding: video.stderr, as: UTF8.self))")
        #expect(lines.contains("Finished (True, 1.5, [(1.5, 2.0)], ['\(TestCard.label) 1.00'])"), "\(lines)")
        #expect(lines.contains("result (True, 1.5, [(1.5, 2.0)], ['\(TestCard.label) 1.00'])"), "\(lines)")
        let progressSignals = lines.split(separator: "\n").first { $0.hasPrefix("progress signals ") }.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
        #expect(progressSignals >= 2, "the service's progress reached the caller: \(lines)")
        #expect(engine.modes.withLock { $0 } == [.child, .child])
    }
}
