import Foundation
import GuardianAPI
import Locking
import Logging
import AccountPipeline
import QuarantineCore
import SensitivityAnalysis
import ServiceSupport

/// The guardian service's `analyze` verb: judges a picture or a video the protected account's
/// session forwarder passed as a descriptor, with the account's own sandboxed worker (the
/// agent's engine) under the policy in force, and answers on the request's connection.
///
/// Each analysis runs detached from the socket's threads: the accept loop and the handler
/// threads never wait for a slow file or a slow client. At most ``maxInFlight`` analyses run at
/// once (more are answered `limitsExceeded` at once). A video's progress is sent at most every
/// ``progressInterval``; a client that closes the connection (or stops reading) has its
/// analysis cancelled. The connection is closed after the final answer.
final class GuardianAnalysis: Sendable {
    /// The engine and settings in force, asked at each request (the agent's).
    typealias Provider = @Sendable () -> (engine: (any AnalysisEngine)?, settings: Settings, problem: String?)

    /// Analyses running at once for the account.
    let maxInFlight: Int
    static let progressInterval: Duration = .milliseconds(250)
    /// How long one answer may wait for the client to make room for it.
    static let sendTimeout: Duration = .seconds(1)

    private struct State {
        var running: [UInt64: Task<Void, Never>] = [:]
        var next: UInt64 = 0
        var stopped = false
    }

    private let provider: Provider
    private let logger: Logger
    private let state = Locked(State())

    init(maxInFlight: Int = 4, logger: Logger, provider: @escaping Provider) {
        self.maxInFlight = maxInFlight
        self.logger = logger
        self.provider = provider
    }

    /// Analyses running now.
    var inFlight: Int { state.withLock { $0.running.count } }

    /// Cancels every analysis (the service stops); their connections are closed as they end.
    func stop() {
        let tasks = state.withLock { s -> [Task<Void, Never>] in
            s.stopped = true
            return Array(s.running.values)
        }
        tasks.forEach { $0.cancel() }
    }

    /// Starts judging `fd` (owned: closed when done) for the request in `bytes`, answering on
    /// `socket`; `done` is called once, after the last answer, to close the connection.
    func start(bytes: [UInt8], fd: Int32, socket: LocalSocket, done: @escaping @Sendable () -> Void) {
        let request: GuardianWire.Analyze
        do throws(GuardianProtocolError) { request = try GuardianProtocol.decode(GuardianWire.Analyze.self, from: bytes) } catch {
            close(fd)
            try? socket.send(GuardianProtocol.refusal(.invalid(error), verb: .analyze))
            return done()
        }
        try? socket.setTimeouts(receive: .milliseconds(1), send: Self.sendTimeout)
        let (engine, settings, problem) = provider()
        func refuse(_ failure: GuardianWire.Analyze.Failure) {
            close(fd)
            send(.init(failure: failure), mode: settings.mode, on: socket)
            done()
        }
        // The descriptor is checked before any byte is read, and before it takes a place.
        if let failure = DescriptorJudge.check(fd, kind: request.kind) { return refuse(failure) }
        guard let engine else {
            return refuse(.init(.unavailable, code: "unavailable", "the guardian service cannot analyse now: \(problem ?? "its analysis is starting")"))
        }
        let progress = Locked<(VideoProgress?, sent: Bool)>((nil, true))
        let kind = request.kind, logger = logger
        // The place is taken and the analysis registered under one lock: taken apart, a request
        // between the check and the registration passed the bound (a third of two ran, seen in
        // CI under load), and an analysis that ended before its registration kept its place.
        let taken = state.withLock { s -> Bool in
            guard !s.stopped, s.running.count < maxInFlight else { return false }
            s.next += 1
            let id = s.next
            let judging = Task {
                defer { close(fd) }
                return await DescriptorJudge.judge(fd, kind: kind, engine: engine, settings: settings) { update in
                    progress.withLock { $0 = (update, false) }
                }
            }
            s.running[id] = Task { [weak self] in
                defer {
                    // Waits for the lock if the registration still holds it.
                    self?.state.withLock { _ = $0.running.removeValue(forKey: id) }
                    done()
                }
                // Until the verdict: progress to the client; a client gone cancels the analysis.
                let watcher = Task {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: Self.progressInterval)
                        if Task.isCancelled { break }
                        if Self.peerGone(socket) { judging.cancel(); break }
                        let update = progress.withLock { p -> VideoProgress? in defer { p.sent = true }; return p.sent ? nil : p.0 }
                        if let update, !Self.sendAnswer(.init(progress: update), mode: settings.mode, on: socket) { judging.cancel(); break }
                    }
                }
                let verdict = await withTaskCancellationHandler { await judging.value } onCancel: { judging.cancel() }
                watcher.cancel()
                await watcher.value
                guard !judging.isCancelled else {
                    logger.debug("an application's \(kind.rawValue) was not judged to the end (the forwarder left or the service stops)")
                    return
                }
                switch verdict {
                case .success(let verdict): _ = Self.sendAnswer(.init(verdict: verdict), mode: settings.mode, on: socket)
                case .failure(let failure): _ = Self.sendAnswer(.init(failure: failure), mode: settings.mode, on: socket)
                }
            }
            return true
        }
        if !taken {
            refuse(.init(.limitsExceeded, code: "busy", "\(maxInFlight) analyses for this account are running already: wait for one to end"))
        }
    }

    private func send(_ answer: GuardianWire.Analyze.Answer, mode: AnalysisMode, on socket: LocalSocket) {
        _ = Self.sendAnswer(answer, mode: mode, on: socket)
    }

    /// Sends one message of the answer; false when the client did not take it.
    static func sendAnswer(_ answer: GuardianWire.Analyze.Answer, mode: AnalysisMode, on socket: LocalSocket) -> Bool {
        let wire = GuardianAnswer(verb: .analyze, role: .child, mode: mode, answer: answer)
        do { try socket.send(GuardianProtocol.encode(wire)) } catch { return false }
        return true
    }

    /// The client closed its end (or sent something, which it must not while it waits).
    static func peerGone(_ socket: LocalSocket) -> Bool {
        var fds = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
        guard poll(&fds, 1, 0) > 0 else { return false }
        return fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR | POLLNVAL) != 0
    }
}
