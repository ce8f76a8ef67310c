import Dispatch
import Locking
import MediaDecoding
import SensitivityAnalysis

/// Judges the frames of a stream on the session bus through the agent's analysis, the same
/// confined worker as every file: the ``VideoFrameJudge`` the bus gives each stream's
/// ``VideoStreamAnalyzer``.
///
/// The worker takes files only, so a frame becomes one: an encoded picture goes as the caller's
/// bytes; a raw frame is first converted to RGB at analysis size (``RawVideoFrame/analysisImage``,
/// pixel arithmetic on a frame whose size was checked) and goes as a BMP file. ``judge(_:policy:)``
/// runs on the analyzer's own thread and waits there for the asynchronous analysis;
/// ``cancel()`` interrupts the analysis under way (the worker is told to stop) and refuses the
/// frames after it.
final class WorkerFrameJudge: VideoFrameJudge {
    /// Judges the picture file `bytes` (the frame numbered `serial` in the stream).
    typealias Analysis = @Sendable (_ bytes: [UInt8], _ serial: UInt64) async throws -> VideoFrameVerdict

    /// Why a frame was not judged because the stream was cancelled.
    struct Cancelled: Error, CustomStringConvertible {
        var description: String { "the stream was cancelled" }
    }

    private struct State {
        var cancelled = false
        var serial: UInt64 = 0
        var running: [UInt64: Task<Void, Never>] = [:]
    }

    private let state = Locked(State())
    private let analysis: Analysis

    init(analysis: @escaping Analysis) {
        self.analysis = analysis
    }

    func judge(_ frame: VideoStreamFrame, policy: SensitivityPolicy) throws -> VideoFrameVerdict {
        let file = try Self.pictureFile(frame)
        let outcome = Locked<Result<VideoFrameVerdict, Error>>(.failure(Cancelled()))
        let done = DispatchSemaphore(value: 0)
        let analysis = self.analysis
        let serial = try state.withLock { s throws(Cancelled) -> UInt64 in
            guard !s.cancelled else { throw Cancelled() }
            s.serial += 1
            let serial = s.serial
            s.running[serial] = Task {
                do {
                    let verdict = try await analysis(file, serial)
                    outcome.withLock { $0 = .success(verdict) }
                } catch {
                    outcome.withLock { $0 = .failure(error) }
                }
                done.signal()
            }
            return serial
        }
        // This is the analyzer's own thread, never one of Swift's cooperative threads.
        done.wait()
        state.withLock { _ = $0.running.removeValue(forKey: serial) }
        return try outcome.withLock { $0 }.get()
    }

    /// Stops the analysis under way and refuses every later frame. Idempotent.
    func cancel() {
        let running = state.withLock { s -> [Task<Void, Never>] in
            s.cancelled = true
            return Array(s.running.values)
        }
        for task in running { task.cancel() }
    }

    /// The frame as a picture file the worker reads.
    static func pictureFile(_ frame: VideoStreamFrame) throws -> [UInt8] {
        switch frame.content {
        case .encoded(let bytes):
            return bytes
        case .raw(let raw):
            return try raw.analysisImage().image.bitmapFile()
        case .rgb(let image, _, _):
            return image.bitmapFile()
        }
    }
}
