#if canImport(Glibc)
import Glibc
#endif
import AccountPipeline
import CSystemShims
import GuardianAPI
import QuarantineCore
import SensitivityAnalysis
import ServiceSupport

/// Judges one guardian stream's frames (``GuardianStreams``) with the account's own sandboxed
/// worker, under the settings the service decided: the ``VideoFrameJudge`` of each stream's
/// ``VideoStreamAnalyzer`` (which applies the one rule, ``StreamInterventions``).
///
/// A frame is a picture file's bytes the service copied from the child's descriptor: they go to
/// the worker in a memfd of the service's own (the child cannot change them meanwhile), through
/// ``DescriptorJudge`` as the `analyze` verb's pictures; nothing is decoded in the service. Each
/// frame waits for its turn at the ``StreamFrameGate`` first. ``judge(_:policy:)`` runs on the
/// analyzer's own thread and waits there; ``cancel()`` interrupts the judgement under way.
final class GuardianFrameJudge: VideoFrameJudge {
    /// Why a frame was not judged: the stream was cancelled.
    typealias Cancelled = FrameJudgementWaits.Cancelled

    private let waits = FrameJudgementWaits()
    private let engine: any AnalysisEngine
    private let settings: Settings
    private let gate: StreamFrameGate

    init(engine: any AnalysisEngine, settings: Settings, gate: StreamFrameGate) {
        self.engine = engine
        self.settings = settings
        self.gate = gate
    }

    var isCancelled: Bool { waits.isCancelled }

    func judge(_ frame: VideoStreamFrame, policy: SensitivityPolicy) throws -> VideoFrameVerdict {
        guard case .encoded(let bytes) = frame.content else {
            throw GuardianWire.Analyze.Failure(.cannotAnalyze, code: "not_a_file", "a guardian stream's frame is a picture file")
        }
        guard gate.enter(while: { !isCancelled }) else { throw Cancelled() }
        defer { gate.leave() }
        let fd: Int32
        switch MemoryFile.holding(bytes, name: "quarantine-stream-frame") {
        case .success(let made): fd = made
        case .failure(let failure): throw GuardianWire.Analyze.Failure(.unavailable, code: "no_memory", failure.description)
        }
        defer { close(fd) }
        let engine = engine, settings = settings
        guard let outcome = waits.run({ try await DescriptorJudge.judge(fd, kind: .image, engine: engine, settings: settings).get() }) else {
            throw Cancelled()
        }
        if isCancelled { throw Cancelled() }
        let verdict = try outcome.get()
        return VideoFrameVerdict(isSensitive: verdict.sensitive, reasons: verdict.reasons, detections: verdict.boxes.map {
            Detection(label: $0.label, score: $0.score, box: Box(x: $0.x, y: $0.y, width: $0.width, height: $0.height))
        })
    }

    /// Interrupts the judgement under way and refuses the frames after it. Idempotent.
    func cancel() { waits.cancel() }
}
