#if canImport(Glibc)
import Glibc
#endif
import Foundation
import AccountPipeline
import GuardianAPI
import Locking
import Logging
import SensitivityAnalysis
import ServiceSupport

/// `AnalyzeImage` and `AnalyzeVideo` on a protected account's session bus (``GuardedAnalysisBus``):
/// the caller's descriptor goes to the guardian service over the account's guardian socket
/// (``GuardianClient/analyze(_:fd:progress:)``, one connection per analysis), which judges the
/// bytes with the account's own sandboxed worker under the account's policy. The replies have
/// the shapes the agent's own (``AnalysisBus``) has: a picture's verdict, or a video job object
/// with `State`, `Progress`, `Result`, `Cancel`, and `Progress`, `Finished`, `Failed` signals.
///
/// Each caller has at most ``AnalysisBus/maxJobsPerCaller`` analyses at once and all callers
/// together ``maxInFlight`` (the guardian service's own bound); a caller that leaves the bus has
/// its analyses cancelled (the connection to the service is shut, which cancels it there too).
final class ForwardedAnalysis: Sendable {
    /// Connects to the guardian service (a seam: tests give a connection of their own).
    typealias Connect = @Sendable () throws -> GuardianClient

    /// Analyses running at once for every caller together (the guardian service runs as many).
    static let maxInFlight = 4

    private struct Running {
        var caller: String
        var client: GuardianClient?
        var cancelled = false
    }

    private struct State {
        var next: UInt64 = 0
        var running: [UInt64: Running] = [:]
        var videoJobs: [String: BusVideoJob] = [:]
        var finishedJobs: [String: [String]] = [:]
        var stopped = false
    }

    private let state = Locked(State())
    private let connect: Connect
    private let logger: Logger
    private let service: @Sendable () -> SessionBusService?

    init(connect: @escaping Connect, logger: Logger, service: @escaping @Sendable () -> SessionBusService?) {
        self.connect = connect
        self.logger = logger
        self.service = service
    }

    /// The video job at `path` when it is `caller`'s.
    func job(at path: String, for caller: String) -> BusVideoJob? {
        state.withLock { $0.videoJobs[path] }.flatMap { $0.owner == caller ? $0 : nil }
    }

    // MARK: - Admission

    /// Takes a place for `caller`; nil after answering the call (over a bound, stopping).
    private func admit(_ call: SessionBusService.Call) -> UInt64? {
        let refused = state.withLock { s -> (String, String)? in
            if s.stopped { return ("org.freedesktop.DBus.Error.ServiceUnknown", "the service is stopping") }
            if s.running.values.filter({ $0.caller == call.sender }).count >= AnalysisBus.maxJobsPerCaller {
                return ("org.freedesktop.DBus.Error.LimitsExceeded", "\(AnalysisBus.maxJobsPerCaller) jobs of this caller are in flight already: wait for one to end")
            }
            if s.running.count >= Self.maxInFlight {
                return ("org.freedesktop.DBus.Error.LimitsExceeded", "\(Self.maxInFlight) analyses for this account's applications are in flight already: wait for one to end")
            }
            return nil
        }
        if let refused { call.fail(refused.0, refused.1); return nil }
        return state.withLock { s in
            s.next += 1
            s.running[s.next] = Running(caller: call.sender)
            return s.next
        }
    }

    /// The descriptor the call carries, when it is one the guardian service reads (checked here
    /// too, so that an obvious mistake is answered at once); nil after answering.
    private func descriptor(of call: SessionBusService.Call, kind: GuardianWire.Analyze.Kind) -> Int32? {
        guard let fd = call.withArguments({ $0.unixFD() }) else {
            call.fail("org.freedesktop.DBus.Error.InvalidArgs", "\(call.member) takes an open descriptor (h) of the file, never a path")
            return nil
        }
        if let failure = DescriptorJudge.check(fd, kind: kind) {
            close(fd)
            call.fail(Self.errorName(failure), failure.message)
            return nil
        }
        return fd
    }

    /// The D-Bus error the agent answers for such a failure.
    static func errorName(_ failure: GuardianWire.Analyze.Failure) -> String {
        switch failure.kind {
        case .invalidDescriptor: "org.freedesktop.DBus.Error.InvalidArgs"
        case .limitsExceeded: "org.freedesktop.DBus.Error.LimitsExceeded"
        case .notAPicture: AnalysisBus.errorPrefix + "NotAPicture"
        case .notAVideo: AnalysisBus.errorPrefix + "NotAVideo"
        case .cannotAnalyze: AnalysisBus.errorPrefix + "CannotAnalyze"
        case .unavailable: AnalysisBus.errorPrefix + "Unavailable"
        }
    }

    /// Asks the guardian service about `fd` (owned: closed here) on a thread of its own.
    private func forward(_ id: UInt64, fd: Int32, kind: GuardianWire.Analyze.Kind, name: String,
                         progress: @escaping @Sendable (VideoProgress) -> Void,
                         done: @escaping @Sendable (Result<GuardianWire.Analyze.Verdict, GuardianWire.Analyze.Failure>?) -> Void) {
        let thread = Thread { [self] in
            defer { close(fd) }
            let outcome: Result<GuardianWire.Analyze.Verdict, GuardianWire.Analyze.Failure>?
            do {
                let client = try connect()
                let cancelled = state.withLock { s -> Bool in
                    s.running[id]?.client = client
                    return s.running[id]?.cancelled ?? true
                }
                if cancelled { client.cancel() }
                switch try client.analyze(kind, fd: fd, progress: progress) {
                case .success(let verdict): outcome = .success(verdict)
                case .failure(.failed(let failure)): outcome = .failure(failure)
                case .failure(.refused(let refusal)): outcome = .failure(.init(.unavailable, code: "refused", "the guardian service refused: \(refusal)"))
                }
            } catch {
                let gone = state.withLock { $0.running[id]?.cancelled ?? true }
                outcome = gone ? nil : .failure(.init(.unavailable, code: "unavailable", "the guardian service cannot be asked: \(error)"))
            }
            let cancelled = state.withLock { s -> Bool in
                defer { s.running[id] = nil }
                return s.running[id]?.cancelled ?? true
            }
            done(cancelled ? nil : outcome)
        }
        thread.name = name
        thread.stackSize = 1 << 18
        thread.start()
    }

    /// Cancels analysis `id`: its connection to the service is shut.
    private func cancel(_ id: UInt64) {
        let client = state.withLock { s -> GuardianClient? in
            s.running[id]?.cancelled = true
            return s.running[id]?.client
        }
        client?.cancel()
    }

    // MARK: - Pictures

    /// `AnalyzeImage(h)`: (b sensitive, as reasons, a(sddddd) boxes, d milliseconds), as the agent answers.
    func analyzeImage(_ call: SessionBusService.Call) {
        guard let fd = descriptor(of: call, kind: .image) else { return }
        guard let id = admit(call) else { close(fd); return }
        let started = ContinuousClock.now
        forward(id, fd: fd, kind: .image, name: "forward-picture", progress: { _ in }) { outcome in
            switch outcome {
            case .success(let verdict):
                let elapsed = ContinuousClock.now - started
                call.reply([.boolean(verdict.sensitive), .stringArray(verdict.reasons),
                            .array(elementSignature: "(sddddd)", verdict.boxes.map {
                                .structure([.string($0.label), .double($0.score), .double($0.x), .double($0.y), .double($0.width), .double($0.height)])
                            }),
                            .double(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)])
            case .failure(let failure):
                call.fail(Self.errorName(failure), failure.message)
            case nil:
                break   // the caller left: nobody to answer
            }
        }
    }

    // MARK: - Videos

    /// `AnalyzeVideo(h)`: a job object at once; its progress and verdict as the service sends them.
    func analyzeVideo(_ call: SessionBusService.Call) {
        guard let fd = descriptor(of: call, kind: .video) else { return }
        guard let id = admit(call) else { close(fd); return }
        let caller = call.sender
        let path = "\(AnalysisBus.objectPath)/video/\(id)"
        let service = self.service
        let job = BusVideoJob(path: path, owner: caller, emit: { member, values in
            service()?.signal(path: path, interface: AnalysisBus.videoJobInterface, member: member, values, destination: caller)
        }, changed: { properties in
            service()?.propertiesChanged(path: path, interface: AnalysisBus.videoJobInterface, properties, destination: caller)
        })
        state.withLock { $0.videoJobs[path] = job }
        // The job's Cancel cancels this task, which shuts the connection to the service.
        let shut: @Sendable () -> Void = { [weak self] in self?.cancel(id) }
        let waiter = Task {
            await withTaskCancellationHandler { while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) } } onCancel: { shut() }
        }
        job.attach(waiter)
        call.reply([.objectPath(path)])
        forward(id, fd: fd, kind: .video, name: "forward-video", progress: { job.progressed($0) }) { [weak self] outcome in
            switch outcome {
            case .success(let verdict):
                job.finished(BusVideoJob.Verdict(sensitive: verdict.sensitive, flaggedTime: verdict.flaggedTime,
                                                 flaggedRanges: verdict.flaggedRanges.compactMap { $0.count == 2 ? $0[0]...max($0[0], $0[1]) : nil },
                                                 reasons: verdict.reasons))
            case .failure(let failure):
                job.failed(code: failure.code, message: failure.message)
            case nil:
                break
            }
            waiter.cancel()
            self?.retire(job)
        }
    }

    /// A video job ended: kept for its `Result`, the oldest finished ones of its caller removed.
    private func retire(_ job: BusVideoJob) {
        state.withLock { s in
            guard s.videoJobs[job.path] != nil else { return }
            s.finishedJobs[job.owner, default: []].append(job.path)
            while let list = s.finishedJobs[job.owner], list.count > AnalysisBus.keptFinishedJobs {
                s.videoJobs[list[0]] = nil
                s.finishedJobs[job.owner]!.removeFirst()
            }
        }
    }

    // MARK: - Leaving

    /// The caller left the bus: its analyses are cancelled, its objects removed.
    func callerLeft(_ caller: String) {
        let (ids, jobs) = state.withLock { s -> ([UInt64], [BusVideoJob]) in
            let ids = s.running.filter { $0.value.caller == caller }.map(\.key)
            let jobs = s.videoJobs.values.filter { $0.owner == caller }
            for job in jobs { s.videoJobs[job.path] = nil }
            s.finishedJobs[caller] = nil
            return (ids, jobs)
        }
        ids.forEach(cancel)
        for job in jobs { job.cancel(reason: "the caller left the bus") }
        if !ids.isEmpty { logger.info("\(caller) left the session bus: \(ids.count) analysis(es) cancelled") }
    }

    /// Cancels everything (the forwarder stops).
    func stop() {
        let (ids, jobs) = state.withLock { s -> ([UInt64], [BusVideoJob]) in
            s.stopped = true
            defer { s.videoJobs = [:] }
            return (Array(s.running.keys), Array(s.videoJobs.values))
        }
        ids.forEach(cancel)
        for job in jobs { job.cancel(reason: "the service is stopping") }
    }
}
