import ArgumentParser
import Dispatch
import Foundation
import MediaDecoding
import QuarantineCore
import SensitivityAnalysis
import Synchronization

/// `quarantine stream INPUT`: analyses a live video (a camera, a pipe, a file played at its own
/// rate) with ``VideoStreamAnalyzer``, one line per change of advice, and a summary at the end.
struct StreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stream",
        abstract: "Analyse a live video (a V4L2 camera, a pipe, a file played at its own rate) and print each change of advice.",
        discussion: """
        INPUT is a camera (/dev/videoN, read through libavdevice's v4l2 input), '-' for standard \
        input, a FIFO, or a file, which is played at its own rate (frames handed over at their \
        timestamps, as 'ffmpeg -re' does) unless --no-pacing is given. Every frame is decoded; \
        frames arriving while the previous ones are still being judged wait in a one-frame slot, and \
        the older one is dropped: the advice is always about what is on screen now.

        The advice follows Apple's video-stream analysis: 'indicate' at the first flagged frame; \
        'interrupt video' and 'mute audio' at once in child mode, after 3 flagged frames in a row \
        in adult mode; lifted after 3 clean frames and 1 s without a flagged one (in child mode an \
        interruption stays until it is acknowledged: press Enter when standard input is a terminal). \
        docs/streams.md gives the rule and the figures.

        --blur-to TARGET writes every frame read, strongly blurred while the advice says indicate \
        sensitivity or interrupt video, to a v4l2loopback virtual camera (/dev/videoM, through \
        libavdevice's v4l2 output, YUV 4:2:0 at the input's size), so that any video-call \
        application can use a protected camera; or to a file, a FIFO or '-' (standard output) as \
        YUV4MPEG (NUT with raw video when the name ends in .nut), to record or play a protected copy. \
        Each frame is held until a verdict vouches for it (about one judgement: the output lags \
        the input by that much) and blurred when none comes within 1 s (fail closed). A /dev path \
        that is not a V4L2 output device is refused before anything is read. Virtual cameras need \
        the v4l2loopback kernel module ('apt install v4l2loopback-dkms', then 'modprobe \
        v4l2loopback' as root; 'quarantine doctor' says whether it is loaded). With '--blur-to -', \
        the advice lines go to standard error. A FIFO is opened once the models are loaded, and \
        the run waits (and says so) until a program opens it for reading.

        Examples:
          quarantine stream /dev/video0
          ffmpeg -re -i call.mp4 -f nut - | quarantine stream --json -
          quarantine stream --mode child recording.mkv
          quarantine stream --mode child --blur-to /dev/video2 /dev/video0
          quarantine stream --blur-to - call.mp4 | ffplay -
          quarantine stream --blur-to protected.y4m /dev/video0

        Exit status: 0 nothing flagged, 1 something was flagged, 2 the input could not be read, \
        the --blur-to target could not be written, or a usage error.
        """
    )

    @Flag(name: .long, help: "Print one JSON object per line (each change, then a summary) instead of text.")
    var json = false

    @Option(name: .long, help: ArgumentHelp("Policy to judge by: adult or child (default: the config file's mode).", valueName: "mode"))
    var mode: AnalysisMode?

    @Option(name: .long, help: ArgumentHelp("Configuration file (default: ~/.config/quarantine/config.toml).", valueName: "file"))
    var config: String?

    @Option(name: .long, help: ArgumentHelp("Frames judged at once, each on its own thread (default 1).", valueName: "n"))
    var judges = 1

    @Option(name: .long, help: ArgumentHelp("At most this many judgements a second, the newest frame each time (default 8; 0: as fast as the judges go).", valueName: "n"))
    var maxRate = 8.0

    @Flag(name: .long, help: "Decode a file as fast as possible instead of at its own rate (frames the judges cannot keep up with are dropped).")
    var noPacing = false

    @Option(name: .long, help: ArgumentHelp("Write every frame, blurred while flagged, to a v4l2loopback device (/dev/videoM), a file or '-' (YUV4MPEG; .nut: NUT).", valueName: "target"))
    var blurTo: String?

    @Argument(help: ArgumentHelp("A camera (/dev/videoN), '-' (standard input), a FIFO or a video file.", valueName: "input"))
    var input: String

    mutating func validate() throws {
        guard (1...8).contains(judges) else { throw ValidationError("--judges must be 1 to 8") }
        guard maxRate >= 0 && maxRate <= 1000 else { throw ValidationError("--max-rate must be 0 (no limit) to 1000 judgements a second") }
    }

    func run() async throws {
        LoggingSetup.bootstrap(.command)
        // The target is checked before anything is read: a /dev path must be a V4L2 output device.
        var destination: LiveVideoSink.Destination?
        if let blurTo {
            do {
                destination = try LiveVideoSink.resolve(blurTo, input: input)
            } catch {
                let camera = VirtualCamera.status()
                let hint = blurTo.hasPrefix("/dev/") && !camera.loaded ? "; \(camera.words)" : ""
                printError("quarantine: --blur-to: \(error)\(hint)")
                throw ExitCode(2)
            }
            if destination?.kind == .pipe {
                // A reader that goes away (ffplay closed) is a write error, not a silent death.
                signal(SIGPIPE, SIG_IGN)
            }
        }
        var settings: Settings
        do {
            if let config, !FileManager.default.fileExists(atPath: config) { throw CLIError("\(config): no such file") }
            settings = try ConfigurationFile.load(config).settings
            if let mode { settings.mode = mode }
        } catch {
            printError("quarantine: \(error)")
            throw ExitCode(2)
        }
        let source: LiveVideoSource
        do {
            source = try LiveVideoSource(input: input, paced: noPacing ? false : nil, limits: settings.analyzer.limits, keepOriginals: destination != nil)
        } catch {
            printError("quarantine: \(error)")
            throw ExitCode(2)
        }
        let analyzer: SensitivityAnalyzer
        do {
            var configuration = settings.analyzer
            configuration.workers = 1  // the stream's own judging threads do the work
            analyzer = try SensitivityAnalyzer(policy: settings.policy, configuration: configuration)
        } catch {
            printError("quarantine: cannot analyse: \(error)")
            throw ExitCode(2)
        }
        // The target is opened (a file created) only once the models are loaded: a run that
        // cannot analyse leaves nothing behind.
        var sink: LiveVideoSink?
        if let destination {
            if destination.kind == .pipe && destination.url != "pipe:1" {
                // Opening a FIFO for writing waits until a program opens it for reading: said, so
                // that a run waiting for its player is not taken for a hung one.
                printError("quarantine: --blur-to \(destination.target): waiting for a program to read the FIFO")
            }
            do {
                sink = try LiveVideoSink(destination, width: source.info.width, height: source.info.height, frameRate: source.info.frameRate)
            } catch {
                printError("quarantine: --blur-to: \(error)")
                throw ExitCode(2)
            }
        }
        let spacing = maxRate > 0 ? Duration.nanoseconds(Int64(1e9 / maxRate)) : nil
        let stream = analyzer.videoStreamAnalyzer(participantUUID: "local", streamDirection: .outgoing, judges: judges, spacing: spacing)
        let output = StreamOutput(json: json, input: input, policy: stream.analysisPolicy, toStandardError: destination?.url == "pipe:1")
        output.started(source.info, judges: judges, maxRate: maxRate, writing: sink)
        let writer = sink.map { BlurredStreamWriter(sink: $0) }
        if let writer { stream.observeJudgements { writer.judged($0) } }

        let printer = Task {
            var flagged = false
            for await change in stream.analysisChanges {
                if change.cause == .flagged || change.cause == .failure { flagged = true }
                output.emit(change)
            }
            return flagged
        }
        // Ctrl-C and SIGTERM end the reading; what was read is still judged and summarised. A
        // second one exits at once (a silent pipe blocks its read until data or its end).
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let asked = SignalCount()
        let signals = [SIGINT, SIGTERM].map { number in
            let watcher = DispatchSource.makeSignalSource(signal: number, queue: .global())
            watcher.setEventHandler {
                if asked.value.add(1, ordering: .relaxed).newValue > 1 { Foundation.exit(128 + number) }
                source.cancel()
            }
            watcher.resume()
            return watcher
        }
        defer { signals.forEach { $0.cancel() } }
        if stream.analysisPolicy == .descriptiveInterventions && input != "-" && isTerminal(0) {
            // The person's acknowledgement of an interruption: a line on the terminal.
            let acknowledge = Thread {
                while readLine() != nil { stream.continueStream() }
            }
            acknowledge.start()
        }
        let reading: Result<LiveVideoSource.Summary, Error> = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Result {
                    try source.run { frame in
                        if let writer, !writer.submit(frame) { return false }
                        stream.analyze(VideoStreamFrame(frame))
                        return true
                    }
                })
            }
            thread.name = "stream-reader"
            thread.start()
        }
        let statistics = await stream.end()
        let flagged = await printer.value
        var written: Result<BlurredStreamWriter.Summary, MediaError>?
        if let writer {
            // Waits for the writing thread: off Swift's cooperative threads.
            written = await withCheckedContinuation { continuation in
                Thread { continuation.resume(returning: Result { () throws(MediaError) in try writer.finish() }) }.start()
            }
        }
        var writtenSummary: BlurredStreamWriter.Summary?
        if case .success(let summary)? = written { writtenSummary = summary }
        switch reading {
        case .success(let summary):
            output.finished(statistics, reading: summary, written: writtenSummary)
        case .failure(let error):
            output.finished(statistics, reading: nil, written: writtenSummary)
            printError("quarantine: \(error)")
            throw ExitCode(2)
        }
        if case .failure(let error)? = written {
            printError("quarantine: --blur-to: \(error)")
            throw ExitCode(2)
        }
        if flagged { throw ExitCode(1) }
    }
}

/// How many stop signals have come (the second exits at once).
final class SignalCount: Sendable {
    let value = Atomic<Int>(0)
}

/// What `quarantine stream` prints: text lines, or one JSON object per line.
struct StreamOutput {
    var json: Bool
    var input: String
    var policy: AnalysisPolicy
    /// Standard output carries the video (`--blur-to -`): the lines go to standard error.
    var toStandardError = false

    func say(_ text: String) {
        if toStandardError { printError(text) } else { printOut(text) }
    }

    static func rounded(_ value: Double, _ places: Double = 1000) -> Double { (value * places).rounded() / places }

    func line<T: Encodable>(_ record: T) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        say(String(decoding: (try? encoder.encode(record)) ?? Data("{}".utf8), as: UTF8.self))
    }

    func started(_ info: LiveVideoSource.Info, judges: Int, maxRate: Double, writing sink: LiveVideoSink? = nil) {
        struct BlurTo: Encodable { var target: String, kind: String, container: String }
        struct Record: Encodable {
            var event = "started"
            var input: String, kind: String, width: Int, height: Int, codec: String, container: String
            var frame_rate: Double?, paced: Bool, policy: String, judges: Int, max_rate: Double?
            var blur_to: BlurTo?
        }
        let blurTo = sink.map { BlurTo(target: $0.destination.target, kind: $0.destination.kind.rawValue, container: $0.destination.container.rawValue) }
        if json {
            line(Record(input: input, kind: info.kind.rawValue, width: info.width, height: info.height, codec: info.codec, container: info.container,
                        frame_rate: info.frameRate.map { Self.rounded($0, 100) }, paced: info.paced, policy: policy.rawValue, judges: judges,
                        max_rate: maxRate > 0 ? maxRate : nil, blur_to: blurTo))
        } else {
            let rate = info.frameRate.map { String(format: " %.4g fps", $0) } ?? ""
            let pacing = info.kind == .file ? (info.paced ? ", played at its own rate" : ", as fast as it decodes") : ""
            let writing = blurTo.map { ", writing it blurred while flagged to \($0.target) (\($0.kind), \($0.container))" } ?? ""
            let judging = maxRate > 0 ? String(format: ", at most %g judgements a second", maxRate) : ""
            say("analysing \(input) (\(info.kind.rawValue), \(info.width)x\(info.height) \(info.codec)\(rate)\(pacing)) with \(policy.rawValue) interventions\(judging)\(writing)")
        }
    }

    func emit(_ change: VideoStreamAnalysis) {
        struct Record: Encodable {
            var event = "change"
            var cause: String
            var indicate_sensitivity: Bool, interrupt_video: Bool, mute_audio: Bool
            var media_time: Double?, frame: Int?, latency: Double?, stream_time: Double?
            var reasons: [String]
        }
        if json {
            line(Record(cause: change.cause.rawValue, indicate_sensitivity: change.shouldIndicateSensitivity,
                        interrupt_video: change.shouldInterruptVideo, mute_audio: change.shouldMuteAudio,
                        media_time: change.mediaTime.map { Self.rounded($0) }, frame: change.frameIndex,
                        latency: change.latency.map { Self.rounded($0) }, stream_time: change.streamTime.map { Self.rounded($0) },
                        reasons: change.reasons))
            return
        }
        var advice: [String] = []
        if change.shouldIndicateSensitivity { advice.append("indicate sensitivity") }
        if change.shouldInterruptVideo { advice.append("interrupt video") }
        if change.shouldMuteAudio { advice.append("mute audio") }
        let at = change.mediaTime.map { String(format: "%9.3f s", $0) } ?? String(repeating: " ", count: 11)
        var text = "\(at)  \(change.cause.rawValue.uppercased().padding(toLength: 9, withPad: " ", startingAt: 0)) "
        text += advice.isEmpty ? "nothing advised" : advice.joined(separator: ", ")
        if !change.reasons.isEmpty { text += " (\(change.reasons.joined(separator: ", ")))" }
        if let frame = change.frameIndex, let latency = change.latency {
            text += String(format: "  [frame %d, judged %.3f s after it arrived; the stream was at %.3f s]", frame, latency, change.streamTime ?? 0)
        }
        if change.cause == .cleared && change.shouldInterruptVideo {
            text += isTerminal(0) && input != "-" ? "; press Enter to acknowledge the interruption" : "; the interruption stays until it is acknowledged"
        }
        say(text)
    }

    func finished(_ s: VideoStreamAnalyzer.Statistics, reading: LiveVideoSource.Summary?, written w: BlurredStreamWriter.Summary? = nil) {
        struct Record: Encodable {
            var event = "summary"
            var frames_seen: Int, frames_judged: Int, frames_dropped: Int, frames_failed: Int, frames_flagged: Int
            var changes: Int, seconds: Double, judged_per_second: Double, seconds_per_judgement: Double
            var media_time: Double?, damaged_packets: Int?, stopped: Bool?
            var frames_written: Int?, frames_blurred_flagged: Int?, frames_blurred_unjudged: Int?
            var mean_hold: Double?, longest_hold: Double?
        }
        if json {
            line(Record(frames_seen: s.seen, frames_judged: s.judged, frames_dropped: s.dropped, frames_failed: s.failed, frames_flagged: s.flagged,
                        changes: s.changes, seconds: Self.rounded(s.seconds), judged_per_second: Self.rounded(s.judgedPerSecond, 100),
                        seconds_per_judgement: Self.rounded(s.secondsPerJudgement), media_time: reading.map { Self.rounded($0.mediaTime) },
                        damaged_packets: reading?.damagedPackets, stopped: reading?.stopped,
                        frames_written: w?.written, frames_blurred_flagged: w?.blurredFlagged, frames_blurred_unjudged: w?.blurredUnjudged,
                        mean_hold: w.map { Self.rounded($0.meanHold) }, longest_hold: w.map { Self.rounded($0.longestHold) }))
        } else {
            let failed = s.failed > 0 ? ", \(s.failed) could not be judged" : ""
            say("\(s.seen) frames seen, \(s.judged) judged, \(s.dropped) dropped, \(s.flagged) flagged\(failed)"
                + String(format: " in %.1f s: %.1f judged per second (%.0f ms per judgement)", s.seconds, s.judgedPerSecond, s.secondsPerJudgement * 1000))
            if let w {
                say("\(w.written) frames written, \(w.blurredFlagged) blurred while flagged, \(w.blurredUnjudged) blurred for want of a verdict"
                    + String(format: "; held %.0f ms on average before being written, at most %.0f ms", w.meanHold * 1000, w.longestHold * 1000))
            }
        }
    }
}

/// Whether a v4l2loopback virtual camera can be written here (`--blur-to`, `doctor`).
enum VirtualCamera {
    struct Status {
        var loaded: Bool
        var words: String
    }

    static func status() -> Status {
        if FileManager.default.fileExists(atPath: "/sys/module/v4l2loopback") {
            return Status(loaded: true, words: "the v4l2loopback module is loaded")
        }
        var release = utsname()
        uname(&release)
        let kernel = withUnsafeBytes(of: &release.release) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        let modules = FileManager.default.fileExists(atPath: "/lib/modules/\(kernel)")
        return Status(loaded: false, words: "the v4l2loopback kernel module is not loaded: install it with 'apt install v4l2loopback-dkms' and load it with 'modprobe v4l2loopback' (as root)"
                      + (modules ? "" : "; this kernel (\(kernel)) has no /lib/modules/\(kernel), so no module can be built or loaded for it"))
    }

    /// `doctor`'s lines: cameras (libavdevice) and the virtual camera; both optional.
    static func doctorLines() -> [(name: String, ok: Bool, detail: String)] {
        [("stream cameras", true, CameraSupport.status.words),
         ("stream virtual camera", true, status().words + " (needed only for 'quarantine stream --blur-to /dev/videoM'; files and pipes need nothing)")]
    }
}
