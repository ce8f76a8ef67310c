import Foundation
import SensitivityAnalysis
import ServiceSupport

extension GuardianClient {
    /// Asks the service to judge the file open at `fd` (the caller keeps its own descriptor):
    /// the verdict, or why there is none. `progress` gets a video's progress as it comes. The
    /// connection is the service's after this (it closes it): use a new client per analysis.
    /// ``cancel()`` from another thread ends the wait (and the service's analysis).
    public func analyze(_ kind: GuardianWire.Analyze.Kind, fd: Int32, progress: (VideoProgress) -> Void = { _ in })
        throws -> Result<GuardianWire.Analyze.Verdict, AnalyzeError> {
        // A video's progress comes every fraction of a second while it moves; a picture's verdict
        // within the worker's own time limits.
        try? socket.setTimeouts(receive: kind == .video ? .seconds(600) : Self.answerTimeout, send: .seconds(10))
        do { try socket.send(GuardianProtocol.encode(GuardianWire.Analyze(kind: kind)), descriptors: [fd]) } catch {
            if let answer = reasonLeftBehind(GuardianWire.Analyze.Answer.self), let refusal = answer.refusal { return .failure(.refused(refusal)) }
            throw closedError(cause: error)
        }
        while true {
            let message: LocalSocket.Message?
            do { message = try socket.receive(maxLength: GuardianProtocol.maxMessage) } catch {
                if let answer = reasonLeftBehind(GuardianWire.Analyze.Answer.self), let refusal = answer.refusal { return .failure(.refused(refusal)) }
                throw closedError(cause: error)
            }
            guard let message else { throw closedError(cause: nil) }
            message.descriptors.forEach { close($0) }
            guard let answer = try? GuardianProtocol.decodeAnswer(GuardianWire.Analyze.Answer.self, from: message.bytes) else {
                throw ServiceError(code: .closed, operation: "guardian request", message: "the guardian service for \(paths.user) sent an answer this quarantine does not understand (a different version?)")
            }
            if let refusal = answer.refusal { return .failure(.refused(refusal)) }
            guard let body = answer.answer, answer.verb == .analyze else {
                throw ServiceError(code: .closed, operation: "guardian request", message: "the guardian service for \(paths.user) answered another verb")
            }
            if let update = body.progress { progress(update); continue }
            if let verdict = body.verdict { return .success(verdict) }
            return .failure(.failed(body.failure ?? .init(.cannotAnalyze, code: "error", "no verdict")))
        }
    }

    /// Ends an ``analyze(_:fd:progress:)`` under way from another thread: the service sees the
    /// connection close and cancels the analysis.
    public func cancel() { socket.shutdownBoth() }

    /// Why an analysis has no verdict: the service refused the request, or judged and failed.
    public enum AnalyzeError: Error, Sendable, Equatable {
        case refused(GuardianRefusal)
        case failed(GuardianWire.Analyze.Failure)
    }
}
