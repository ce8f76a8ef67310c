import Foundation
import SensitivityAnalysis
import ServiceSupport

extension GuardianClient {
    /// How long ``beginStream(participant:direction:)`` waits for the service's answer.
    public static let beginTimeout: Duration = .seconds(10)

    /// Begins a stream on this connection (``GuardianWire/LiveStream``): the policy the service
    /// judges it by, or why there is none (the service's failure: a third stream, no engine; or
    /// `unavailable` when it cannot be asked, or does not answer within ``beginTimeout``). The
    /// connection is the stream's after this; once begun it has no receive timeout any more (a
    /// stream lasts as long as its application wants).
    public func beginStream(participant: String, direction: VideoStreamAnalyzer.StreamDirection) -> Result<AnalysisPolicy, GuardianWire.Analyze.Failure> {
        try? socket.setTimeouts(receive: Self.beginTimeout, send: .seconds(10))
        do { try socket.send(GuardianProtocol.encode(GuardianWire.LiveStream(step: .begin, participant: participant, direction: direction))) } catch {
            if let answer = reasonLeftBehind(GuardianWire.LiveStream.Answer.self), let refusal = answer.refusal {
                return .failure(.init(.unavailable, code: "refused", "the guardian service refused: \(refusal)"))
            }
            return .failure(.init(.unavailable, code: "unavailable", "the guardian service cannot be asked: \(closedError(cause: error))"))
        }
        guard let answer = streamAnswer() else {
            return .failure(.init(.unavailable, code: "unavailable", "the guardian service closed the stream's connection without an answer"))
        }
        if let refusal = answer.refusal { return .failure(.init(.unavailable, code: "refused", "the guardian service refused: \(refusal)")) }
        if let policy = answer.answer?.began {
            try? socket.setTimeouts(receive: .zero, send: .seconds(10))
            return .success(policy)
        }
        return .failure(answer.answer?.failure ?? .init(.unavailable, code: "unavailable", "the guardian service did not begin the stream"))
    }

    /// Sends one step of a stream begun on this connection; `frame` (for ``GuardianWire/LiveStream/Step/frame``)
    /// is the picture file's descriptor (the caller keeps its own). Throws when the service did not take it.
    public func sendStreamStep(_ step: GuardianWire.LiveStream.Step, frame: Int32? = nil) throws(ServiceError) {
        try socket.send(GuardianProtocol.encode(GuardianWire.LiveStream(step: step)), descriptors: frame.map { [$0] } ?? [])
    }

    /// The service's next message on a stream; nil once the connection is gone (or the message
    /// is not understood). Blocks until one comes.
    public func streamAnswer() -> GuardianAnswer<GuardianWire.LiveStream.Answer>? {
        guard let message = try? socket.receive(maxLength: GuardianProtocol.maxMessage) else { return nil }
        message.descriptors.forEach { close($0) }
        return try? GuardianProtocol.decodeAnswer(GuardianWire.LiveStream.Answer.self, from: message.bytes)
    }
}
