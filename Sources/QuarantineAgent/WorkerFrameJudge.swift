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
    typealias Cancelled = FrameJudgementWaits.Cancelled

    private let waits = FrameJudgementWaits()
    private let serial = Locked<UInt64>(0)
    private let analysis: Analysis

    init(analysis: @escaping Analysis) {
        self.analysis = analysis
    }

    func judge(_ frame: VideoStreamFrame, policy: SensitivityPolicy) throws -> VideoFrameVerdict {
        let file = try Self.pictureFile(frame)
        let analysis = self.analysis
        let number = serial.withLock { $0 += 1; return $0 }
        guard let outcome = waits.run({ try await analysis(file, number) }) else { throw Cancelled() }
        return try outcome.get()
    }

    /// Stops the analysis under way and refuses every later frame. Idempotent.
    func cancel() { waits.cancel() }

    /// The frame as a picture file the worker reads.
    static func pictureFile(_ frame: VideoStreamFrame) throws -> [UInt8] {
        switch frame.content {
        case .encoded(let bytes):
            return bytes
        case .raw(let raw):
            return try raw.analysisImage().image.bitmapFile()
        case .rgb(let image, _, _):
            return image.bitmapFile()
        case .picture(let picture, _, _):
            return try picture.image().bitmapFile()
        }
    }
}
