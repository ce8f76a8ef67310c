import Foundation
import Testing
import TestSupport

/// `quarantine stream` end to end: ffmpeg plays a 720p30 clip at its own rate into a pipe, the
/// built binary reads it from standard input (issue 31).
@Suite("CLI stream", .serialized)
struct StreamCommandTests {
    @Test("a pipe from ffmpeg -re: the card is flagged within 0.5 s, cleared after, and summarised; exit 1")
    func pipeEndToEnd() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let card = cli.home.appendingPathComponent("card.png").path
        #expect(try await cli.run(["testcard", "--size", "800x450", card]).status == 0)
        let clip = cli.home.appendingPathComponent("call.mp4").path
        try FFmpegTool.run(["-f", "lavfi", "-i", "testsrc2=s=1280x720:r=30:d=6", "-i", card, "-filter_complex",
                            "[0][1]overlay=x=240:y=135:enable='between(t,2,3.5)'", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30",
                            "-pix_fmt", "yuv420p", clip])
        let pipeline = "ffmpeg -hide_banner -loglevel error -re -i '\(clip)' -c copy -f mpegts - | '\(CLIRunner.binary.path)' stream --json -"
        let result = try await offPool("stream-pipe") {
            try Spawned.run("/bin/sh", ["-c", pipeline], environment: cli.environment([:]), timeout: 120)
        }
        let stdout = String(decoding: result.stdout, as: UTF8.self)
        #expect(result.status == 1, "exit \(result.status): \(String(decoding: result.stderr, as: UTF8.self))")
        let lines = stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let started = try #require(lines.first)
        #expect(started["event"] as? String == "started" && started["kind"] as? String == "pipe" && started["width"] as? Int == 1280)
        let changes = lines.filter { $0["event"] as? String == "change" }
        let flagged = try #require(changes.first, "\(stdout)")
        #expect(flagged["cause"] as? String == "flagged" && flagged["indicate_sensitivity"] as? Bool == true)
        let at = try #require(flagged["media_time"] as? Double), streamAt = try #require(flagged["stream_time"] as? Double)
        // mpegts starts its clock at 1.4 s or so; the source counts from the first frame.
        #expect(at >= 2 - 0.001 && streamAt <= 2.5, "card from 2 s: frame at \(at) s flagged when the stream was at \(streamAt) s: \(stdout)")
        let cleared = try #require(changes.last)
        #expect(cleared["cause"] as? String == "cleared" && cleared["indicate_sensitivity"] as? Bool == false
                && cleared["interrupt_video"] as? Bool == false, "\(stdout)")
        #expect((cleared["media_time"] as? Double ?? 0) >= 3.5 + 1 - 0.001)
        let summary = try #require(lines.last)
        #expect(summary["event"] as? String == "summary")
        let seen = summary["frames_seen"] as? Int ?? 0, judged = summary["frames_judged"] as? Int ?? 0, dropped = summary["frames_dropped"] as? Int ?? -1
        #expect(seen == 180 && judged > 10 && judged + dropped == seen, "\(summary)")
        print("quarantine stream (pipe, 720p30): \(summary)")
    }

    @Test("--blur-to without the v4l2loopback module, an input that does not exist and a device that is no camera are refused with the reason; exit 2")
    func refusals() async throws {
        let cli = try CLIRunner(); defer { cli.cleanUp() }
        let missing = try await cli.run(["stream", "/nonexistent/\(UUID())"])
        #expect(missing.status == 2 && missing.stderr.contains("does not exist"), "\(missing.stderr)")
        // A character device is taken for a camera and opened with libavdevice's v4l2 input,
        // which refuses one that is not (VIDIOC_QUERYCAP fails on /dev/null).
        let notCamera = try await cli.run(["stream", "/dev/null"])
        #expect(notCamera.status == 2 && notCamera.stderr.contains("cannot be opened as a V4L2 camera"), "\(notCamera.stderr)")
        guard !FileManager.default.fileExists(atPath: "/sys/module/v4l2loopback") else { return }
        let blur = try await cli.run(["stream", "--blur-to", "/dev/video9", "-"])
        #expect(blur.status == 2 && blur.stderr.contains("v4l2loopback") && blur.stderr.contains("modprobe v4l2loopback"), "\(blur.stderr)")
        let doctor = try await cli.run(["doctor", "--json"])
        #expect(doctor.stdout.contains("stream virtual camera") && doctor.stdout.contains("v4l2loopback-dkms"))
    }
}
