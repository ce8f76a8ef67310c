#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Locking
import MediaDecoding

/// A pipe of raw frames for a stream on the session bus (`AnalyzeRawFrames`): uncompressed
/// frames of one size and layout, one after another, read on a thread of its own (never the
/// bus's) until the writer closes it, the stream ends, or the caller leaves.
///
/// Each whole frame is handed on as it completes (``start(deliver:ended:)``); the stream drops
/// the frames it cannot judge in time (oldest first), so the pipe is read as fast as it is
/// written and holds at most one frame being filled. The size and layout are checked before
/// anything is read; only a pipe, a FIFO or a socket is taken (a file goes to `AnalyzeRawFrame`).
final class RawFramePipe: Sendable {
    /// Pipes read at once by the whole agent (each costs a thread and a frame's buffer).
    static let maxOpen = 16
    private static let open = Locked(0)
    /// How often the thread looks whether it must stop while the pipe is quiet.
    static let stopCheck: Int32 = 100

    let fd: Int32
    let width: Int
    let height: Int
    let format: RawVideoFrame.PixelFormat
    /// One frame's bytes.
    let frameBytes: Int
    private let stopped = Locked(false)
    private let done = DispatchSemaphore(value: 0)
    private let started = Locked(false)

    /// Takes `fd` (closed by the pipe from now on, also when this throws) for frames of
    /// `width` x `height` in `format`.
    init(fd: Int32, width: Int, height: Int, format formatName: String) throws(AnalysisBus.Failure) {
        var info = stat()
        guard fstat(fd, &info) == 0, [S_IFIFO, S_IFSOCK].contains(info.st_mode & S_IFMT) else {
            close(fd)
            throw AnalysisBus.Failure(name: "org.freedesktop.DBus.Error.InvalidArgs",
                                      message: "AnalyzeRawFrames reads a pipe (or a socket): for a memfd or a file, send each frame with AnalyzeRawFrame")
        }
        let layout: (RawVideoFrame.PixelFormat, Int)
        do { layout = try AnalysisBus.rawFrameLayout(width: width, height: height, format: formatName) } catch {
            close(fd)
            throw error
        }
        let admitted = Self.open.withLock { count -> Bool in
            guard count < Self.maxOpen else { return false }
            count += 1
            return true
        }
        guard admitted else {
            close(fd)
            throw AnalysisBus.Failure(name: "org.freedesktop.DBus.Error.LimitsExceeded",
                                      message: "\(Self.maxOpen) pipes of frames are read already: send frames one by one with AnalyzeRawFrame, or wait")
        }
        self.fd = fd
        self.width = width
        self.height = height
        (format, frameBytes) = layout
    }

    /// Reads frames on a thread of its own: `deliver` each whole frame; at the end, `ended` once
    /// with the frames read and why: `end` (the writer closed the pipe after a whole frame),
    /// `partial` (it closed mid-frame: that part is dropped), `stopped` (``stop()``), or
    /// `error: ...`. The descriptor is closed then.
    func start(deliver: @escaping @Sendable (RawVideoFrame) -> Void, ended: @escaping @Sendable (_ frames: UInt64, _ reason: String) -> Void) {
        started.withLock { $0 = true }
        let thread = Thread { [self] in
            let (frames, reason) = readLoop(deliver)
            close(fd)
            Self.open.withLock { $0 -= 1 }
            ended(frames, reason)
            done.signal()
        }
        thread.name = "stream-pipe"
        thread.start()
    }

    /// Stops reading (the thread ends within ``stopCheck`` ms); with `wait`, returns once it has.
    /// Idempotent. A pipe never started is closed here.
    func stop(wait: Bool) {
        let first = stopped.withLock { s -> Bool in defer { s = true }; return !s }
        guard started.withLock({ $0 }) else {
            if first {
                close(fd)
                Self.open.withLock { $0 -= 1 }
            }
            return
        }
        if wait {
            done.wait()
            done.signal()
        }
    }

    private func readLoop(_ deliver: (RawVideoFrame) -> Void) -> (UInt64, String) {
        var frames: UInt64 = 0
        var buffer = [UInt8](repeating: 0, count: frameBytes)
        var filled = 0
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while !stopped.withLock({ $0 }) {
            poller.revents = 0
            let ready = poll(&poller, 1, Self.stopCheck)
            if ready < 0 {
                if errno == EINTR { continue }
                return (frames, "error: \(String(cString: strerror(errno)))")
            }
            guard ready > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, frameBytes - filled) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return (frames, "error: \(String(cString: strerror(errno)))")
            }
            if n == 0 { return (frames, filled == 0 ? "end" : "partial") }
            filled += n
            guard filled == frameBytes else { continue }
            filled = 0
            frames += 1
            // The size was checked when the pipe was taken: this cannot fail.
            if let frame = try? RawVideoFrame(format: format, width: width, height: height, bytes: buffer) { deliver(frame) }
        }
        return (frames, "stopped")
    }
}
