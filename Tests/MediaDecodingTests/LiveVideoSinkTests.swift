import Foundation
import Testing
import CFFmpeg
@testable import MediaDecoding

/// ``LiveVideoSink``: how a target is taken, frames written and read back exactly, and the v4l2
/// muxer reached (no v4l2loopback device on this machine: it goes as far as the device's ioctl).
@Suite("Live video sink")
struct LiveVideoSinkTests {
    func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-sink-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("targets: '-' and files by name (YUV4MPEG unless .nut); /dev paths must be V4L2 output devices")
    func resolving() throws {
        let dir = try folder(); defer { try? FileManager.default.removeItem(at: dir) }
        let stdout = try LiveVideoSink.resolve("-")
        #expect(stdout.kind == .pipe && stdout.container == .yuv4mpegpipe && stdout.url == "pipe:1")
        let nut = try LiveVideoSink.resolve(dir.appendingPathComponent("a:b.NUT").path)
        #expect(nut.kind == .file && nut.container == .nut && nut.url.hasPrefix("file:/"))
        let other = try LiveVideoSink.resolve(dir.appendingPathComponent("copy.mkv").path)
        #expect(other.container == .yuv4mpegpipe)
        #expect(throws: MediaError.self) { try LiveVideoSink.resolve("/dev/null") }
        #expect(throws: MediaError.self) { try LiveVideoSink.resolve("/dev/video-\(UUID())") }
        #expect(throws: MediaError.self) { try LiveVideoSink.resolve(dir.path) }
        do {
            _ = try LiveVideoSink.resolve("/dev/null")
        } catch {
            #expect(error.description.contains("is not a V4L2 device") && error.operation == "VIDIOC_QUERYCAP", "\(error)")
        }
    }

    @Test("frames written as NUT and YUV4MPEG are read back byte for byte (LiveVideoSource, originals kept)")
    func roundTrip() throws {
        let dir = try folder(); defer { try? FileManager.default.removeItem(at: dir) }
        let width = 64, height = 48
        let frames = (0..<5).map { n in
            (try? RawVideoFrame(format: .yuv420p, width: width, height: height,
                                bytes: (0..<RawVideoFrame.PixelFormat.yuv420p.byteCount(width: width, height: height)).map { UInt8(truncatingIfNeeded: $0 * 7 + n * 31) }))!
        }
        for name in ["copy.nut", "copy.y4m"] {
            let path = dir.appendingPathComponent(name).path
            let sink = try LiveVideoSink(LiveVideoSink.resolve(path), width: width, height: height, frameRate: 10)
            for (n, frame) in frames.enumerated() { try sink.write(frame, time: Double(n) / 10) }
            let wrongSize = try RawVideoFrame(format: .yuv420p, width: 2, height: 2, bytes: [UInt8](repeating: 0, count: 6))
            #expect(throws: MediaError.self) { try sink.write(wrongSize, time: 1) }
            try sink.finish()
            let source = try LiveVideoSource(input: path, paced: false, keepOriginals: true)
            var read: [RawVideoFrame] = []
            _ = try source.run { read.append($0.original!); return true }
            #expect(read.count == frames.count, "\(name)")
            #expect(zip(read, frames).allSatisfy { $0.bytes == $1.bytes }, "\(name): frames differ")
        }
    }

    @Test("the v4l2 output device of libavdevice is registered and goes to the device (a file is refused by its ioctl)")
    func v4l2Muxer() throws {
        let dir = try folder(); defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("not-a-device").path
        FileManager.default.createFile(atPath: path, contents: Data())
        _ = CameraSupport.status
        #expect(av_guess_format("v4l2", nil, nil) != nil)
        let destination = LiveVideoSink.Destination(target: path, kind: .virtualCamera, container: .v4l2, url: path)
        do {
            _ = try LiveVideoSink(destination, width: 64, height: 48, frameRate: 30)
            Issue.record("a regular file was taken as a V4L2 output device")
        } catch {
            #expect(error.operation == "avformat_write_header" && error.cause?.contains("ioctl") == true, "\(error)")
        }
    }
}
