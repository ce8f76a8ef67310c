import Foundation
import MediaDecoding
import Synchronization

/// Analyses files for nudity on this machine: decode, the test card, NudeNet and open_nsfw,
/// then the policy of the current mode. Both models are loaded once and shared by all workers;
/// the blocking work runs on dedicated threads.
public final class SensitivityAnalyzer: Sendable {
    /// Tuning that does not change verdicts.
    public struct Configuration: Sendable, Equatable, Codable {
        /// Files analysed at once (each on its own thread).
        public var workers: Int
        /// ONNX Runtime threads inside one model run.
        public var intraOpThreads: Int
        public var limits: MediaLimits
        /// Analysis threads at nice 10 and idle I/O class (the agent; not an interactive scan).
        public var lowPriority = false

        /// Measured on 2 cores (docs/performance.md, "Threads"): one ORT thread per run and one worker per
        /// core gives more pictures per second than one worker with all cores inside ORT,
        /// because decoding and pre-processing are single-threaded and overlap with inference.
        public init(workers: Int = ProcessInfo.processInfo.activeProcessorCount, intraOpThreads: Int = 1, limits: MediaLimits = .default) {
            self.workers = max(1, workers)
            self.intraOpThreads = max(0, intraOpThreads)
            self.limits = limits
        }
    }

    /// Pictures are shrunk while decoding (JPEG DCT scaling, area averaging for others) only
    /// down to this many times what each model samples: 640 px on the long side (NudeNet's 320
    /// letterbox), 512 on the short side (open_nsfw's 256 resize). Measured on the golden photos
    /// against upstream (which resamples from full size): at 1× the open_nsfw score drifts by up
    /// to 0.051 and NudeNet's by 0.057; at 2× by 0.015 and 0.026; unshrunk by 0.00005 and 0.0002.
    /// A 12 MP JPEG still decodes at 1/4 scale instead of full size.
    public static let shrinkFloorFactor = 2

    /// The policy used where a call names none.
    public let policy: SensitivityPolicy
    public let configuration: Configuration
    /// The runtime and both models: loaded in the initializer, or at the first picture that
    /// needs them (``ModelLoading``).
    let models: LoadedModels
    let decoder: ImageDecoder
    let pool: WorkerPool
    /// Videos run on their own threads (half the workers, at least one), so a long video is
    /// analysed beside new pictures, never in front of them.
    let videoPool: WorkerPool
    public let videoOptions: VideoOptions
    /// Test only: the models' stand-in (see the initializer that takes it).
    let modelsStandIn: Bool

    /// When the runtime and the models are loaded (their files are verified in the initializer
    /// either way, so that a missing or damaged one is said at once).
    public enum ModelLoading: Sendable {
        /// In the initializer: the analysis worker, which loads everything before it gives up the
        /// file system.
        case atOnce
        /// At the first picture that needs them. A test card, a file that is no picture and a
        /// folder with nothing to judge never load them (`quarantine scan` of the test card:
        /// 267-368 ms of CPU before, 31-39 ms after, 5 interleaved runs each).
        case atFirstUse
    }

    /// Verifies the runtime and both models from `catalog` (every sha256) and loads them, at
    /// once or at their first use (`loading`).
    public convenience init(policy: SensitivityPolicy, configuration: Configuration = Configuration(), videoOptions: VideoOptions = VideoOptions(),
                            catalog: ModelCatalog = .standard(), loading: ModelLoading = .atOnce) throws(InferenceError) {
        try self.init(policy: policy, configuration: configuration, videoOptions: videoOptions, catalog: catalog, loading: loading,
                      modelsStandIn: false)
    }

    /// Test only (internal, reached with `@testable`): with `modelsStandIn`, the models are never
    /// loaded and never run; the test card is found as always and every other picture is clean.
    /// A stand-in for the models in the tests of the video plan (which samples are taken, gaps,
    /// coverage, resuming, where a card is found), whose cost was the models' on every sample;
    /// the real models judge video frames in the tests beside them.
    init(policy: SensitivityPolicy, configuration: Configuration = Configuration(), videoOptions: VideoOptions = VideoOptions(),
         catalog: ModelCatalog = .standard(), loading: ModelLoading = .atOnce, modelsStandIn: Bool) throws(InferenceError) {
        self.policy = policy
        self.configuration = configuration
        self.videoOptions = videoOptions
        self.modelsStandIn = modelsStandIn
        let runtimePath = try catalog.verified(ModelCatalog.runtime)
        let detectorPath = try catalog.verified(ModelCatalog.nudeNet)
        let classifierPath = try catalog.verified(ModelCatalog.openNSFW)
        models = LoadedModels(runtimePath: runtimePath, detectorPath: detectorPath, classifierPath: classifierPath,
                              intraOpThreads: configuration.intraOpThreads)
        if loading == .atOnce && !modelsStandIn { _ = try models.get() }
        decoder = ImageDecoder(limits: configuration.limits,
                               minimumLongSide: Self.shrinkFloorFactor * NudeDetector.inputSize,
                               minimumShortSide: Self.shrinkFloorFactor * NSFWClassifier.resizeSide)
        pool = WorkerPool(threads: configuration.workers, name: "analysis", lowPriority: configuration.lowPriority)
        videoPool = WorkerPool(threads: max(1, configuration.workers / 2), name: "video", lowPriority: configuration.lowPriority)
    }

    /// Whether the runtime and the models are loaded (or their loading failed).
    public var modelsLoaded: Bool { models.isLoaded }

    /// The runtime and both models, loaded once, by the first caller that needs them (the others
    /// wait for it); a failure is kept and given to every later caller.
    final class LoadedModels: Sendable {
        /// The two models (each session keeps the runtime).
        final class Loaded: Sendable {
            let detector: NudeDetector
            let classifier: NSFWClassifier

            init(detector: NudeDetector, classifier: NSFWClassifier) {
                self.detector = detector
                self.classifier = classifier
            }
        }

        /// What loaded models are told apart by: the versions of the runtime's and the models'
        /// files (any change to one is another key) and the threads per run.
        struct Key: Hashable {
            let files: [ModelDigestRecord.Identity]
            let intraOpThreads: Int
        }

        /// A reference that does not keep the models loaded.
        struct Held: @unchecked Sendable {
            weak var models: Loaded?
        }

        /// The models loaded in this process, shared by every analyzer that needs the same ones
        /// while any of them holds them, as one analyzer's workers share them: an agent's reload
        /// makes a new analyzer, and the test suite makes dozens (23 loads of both models, about
        /// 150 ms of CPU each, before they were shared). Loads are made one at a time under its
        /// lock, so two analyzers starting together load once.
        private static let loadedInProcess = Mutex<[Key: Held]>([:])

        let runtimePath: String, detectorPath: String, classifierPath: String
        let intraOpThreads: Int
        private let state = Mutex<Result<Loaded, InferenceError>?>(nil)

        init(runtimePath: String, detectorPath: String, classifierPath: String, intraOpThreads: Int) {
            self.runtimePath = runtimePath
            self.detectorPath = detectorPath
            self.classifierPath = classifierPath
            self.intraOpThreads = intraOpThreads
        }

        var isLoaded: Bool { state.withLock { $0 != nil } }

        func get() throws(InferenceError) -> Loaded {
            let result = state.withLock { current in
                if let current { return current }
                let loaded = Result { () throws(InferenceError) in try load() }
                current = loaded
                return loaded
            }
            return try result.get()
        }

        /// The two models at once, each loaded on a thread of its own: an analysis worker does
        /// this at every start (again after each idle exit), and the two take about the same
        /// time (measured: 180 ms one after the other, 110 ms side by side on 2 cores).
        private func load() throws(InferenceError) -> Loaded {
            let files = [runtimePath, detectorPath, classifierPath].compactMap(ModelDigestRecord.Identity.init(ofFileAt:))
            guard files.count == 3 else { return try loadAnew() }
            let key = Key(files: files, intraOpThreads: intraOpThreads)
            return try Self.loadedInProcess.withLock { (loaded: inout [Key: Held]) throws(InferenceError) -> Loaded in
                if let models = loaded[key]?.models { return models }
                let models = try loadAnew()
                loaded = loaded.filter { $0.value.models != nil }
                loaded[key] = Held(models: models)
                return models
            }
        }

        private func loadAnew() throws(InferenceError) -> Loaded {
            let runtime = try OnnxRuntime(path: runtimePath)
            let threads = intraOpThreads, classifierPath = classifierPath
            let classifierLoad = SensitivityAnalyzer.onThread(named: "load-open-nsfw") { () throws(InferenceError) in
                try InferenceSession(runtime: runtime, modelPath: classifierPath, intraOpThreads: threads)
            }
            let detectorSession = Result { () throws(InferenceError) in
                try InferenceSession(runtime: runtime, modelPath: detectorPath, intraOpThreads: threads)
            }
            let classifierSession = classifierLoad()
            return Loaded(detector: try NudeDetector(session: detectorSession.get()), classifier: try NSFWClassifier(session: classifierSession.get()))
        }
    }

    /// Starts `work` on a thread of its own; the returned function waits for its result.
    static func onThread<T: Sendable>(named name: String, _ work: @escaping @Sendable () throws(InferenceError) -> T)
        -> () -> Result<T, InferenceError> {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<T, InferenceError>?
        let thread = Thread {
            result = Result { () throws(InferenceError) in try work() }
            done.signal()
        }
        thread.name = name
        thread.start()
        return {
            done.wait()
            return result!
        }
    }

    /// Runs other blocking work for a file (hashing, say) on the threads of its kind, so that it
    /// is paced like the analysis and never occupies Swift's cooperative threads.
    public func runBlocking<T: Sendable>(video: Bool = false, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await (video ? videoPool : pool).run(work)
    }

    /// Analyses the picture at `path` (never following a symbolic link), off the caller's thread.
    public func analyzeImage(at path: String) async throws -> SensitivityAnalysis {
        try await pool.run { [self] in try analyzeImageSynchronously(at: path) }
    }

    /// Analyses a picture at `url`.
    public func analyzeImage(at url: URL) async throws -> SensitivityAnalysis {
        try await analyzeImage(at: url.path)
    }

    /// The same analysis on the calling thread (for callers that manage their own threads).
    public func analyzeImageSynchronously(at path: String) throws -> SensitivityAnalysis {
        let report = reportSynchronously(forFileAt: path)
        if let failure = report.failure { throw failure }
        guard let analysis = report.analysis else {
            throw FileReport.Failure(code: MediaError.Code.unsupportedFormat.rawValue, message: "\(path): is not a picture")
        }
        return analysis
    }

    /// Judges an already decoded picture by `policy` (default: the analyzer's own). With
    /// `modelsAtOnce`, the whole-picture score runs on a thread of its own while the detector runs
    /// on this one (``onThread(named:_:)``, as the two models are loaded): the answer comes sooner
    /// (a live stream's frame, whose latency is the point) for the same CPU, and on a busy machine
    /// two runnable threads get two shares of the cores, not one; files keep one thread a picture
    /// (their throughput comes from judging several at once).
    public func analyze(_ decoded: DecodedImage, path: String, identity: FileIdentity, policy: SensitivityPolicy? = nil,
                        modelsAtOnce: Bool = false) throws(InferenceError) -> SensitivityAnalysis {
        let policy = policy ?? self.policy
        var detections: [Detection]
        var nsfw: Double? = nil
        if let card = TestCard.locate(decoded.image) {
            // Where the card is, in the original picture's pixels (the whole of it when it fills it).
            // (Multiplied first, so that the whole picture comes out exactly.)
            func x(_ v: Double) -> Double { v * Double(decoded.originalWidth) / Double(decoded.image.width) }
            func y(_ v: Double) -> Double { v * Double(decoded.originalHeight) / Double(decoded.image.height) }
            detections = [Detection(label: TestCard.label, score: 1, box: Box(x: x(card.x), y: y(card.y), width: x(card.width), height: y(card.height)))]
        } else if modelsStandIn {
            detections = []
        } else {
            let models = try models.get()
            if modelsAtOnce {
                let classifier = models.classifier, image = decoded.image
                let score = Self.onThread(named: "stream-score") { () throws(InferenceError) in try classifier.score(image) }
                let detected = Result { () throws(InferenceError) in try models.detector.detect(decoded) }
                nsfw = try score().get()
                detections = try detected.get()
            } else {
                detections = try models.detector.detect(decoded)
                nsfw = try models.classifier.score(decoded.image)
            }
        }
        // The rules judge the raw output; the raw detections and score are kept as they are.
        var recheckError: InferenceError?
        // Colour statistics only when a counted body part is there for the skin rules to weigh.
        let longSide = max(decoded.originalWidth, decoded.originalHeight), shortSide = min(decoded.originalWidth, decoded.originalHeight)
        let weighed = policy.rules.skinMinimum != nil && detections.contains {
            SensitivityPolicy.partLabels.contains($0.label) && $0.score >= (policy.labelThresholds[$0.label] ?? 2)
        }
        let colour = weighed ? ColourEvidence(decoded.image, originalWidth: decoded.originalWidth, originalHeight: decoded.originalHeight) : nil
        let judgement = policy.judge(detections: detections, nsfw: nsfw, longSide: longSide, shortSide: shortSide, colour: colour) { part in
            do throws(InferenceError) { return try self.recheck(part, in: decoded) } catch {
                recheckError = error
                return [part.score, part.score]  // fail closed: a re-check that cannot run confirms
            }
        }
        if let recheckError { throw recheckError }
        let reasons = judgement.reasons
        var analysis = SensitivityAnalysis(path: path, kind: .image, type: decoded.type, isSensitive: !reasons.isEmpty,
                                           detections: detections, nsfwScore: nsfw, reasons: reasons, mode: policy.mode,
                                           width: decoded.originalWidth, height: decoded.originalHeight,
                                           identity: identity, elapsedMilliseconds: 0)
        analysis.partialReason = decoded.partialReason
        analysis.rulings = judgement.rulings.isEmpty ? nil : judgement.rulings
        return analysis
    }
}
