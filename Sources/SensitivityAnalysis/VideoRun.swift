import CSystemShims
import Foundation
import MediaDecoding
import Synchronization
import Locking

/// One video analysis under way: the samples the decoders hand over, their verdicts (inference
/// runs on the analyzer's workers, behind any picture), coverage, progress, and the final
/// verdict. ``coarseToFine(_:second:)`` serves indexed videos, ``sequential(_:)`` the rest.
final class VideoRun: @unchecked Sendable {
    let handler: VideoAnalysisHandler
    let file: MediaFile
    let info: VideoDecoder.Info
    let gap: Double
    let rule: VideoSamplingRule
    let duration: Double?
    let frameDuration: Double
    let skipIdentical: Bool
    let allRanges: Bool
    let started = DispatchTime.now().uptimeNanoseconds
    /// Samples decoded but not yet judged, at most: bounds memory, and keeps the decoders close
    /// behind the models.
    let inFlight = DispatchSemaphore(value: 3)
    let pending = DispatchGroup()
    let state = Locked(State())

    struct Record {
        var time: Double
        var analysis: SensitivityAnalysis?
        /// Kept only for a flagged frame (the vault blurs it for its preview).
        var frame: RGBImage?
        /// A skipped sample: the record whose verdict it shares.
        var sameAs: Int?
    }

    enum PickState { case unknown, submitted, judged, failed }

    struct State {
        var records: [Record] = []
        var failure: (any Error)?
        var flagged = false
        /// Flagged during the refinement (the search for the onset before a flagged frame).
        var refinementFlagged = false
        /// Analysed stretches, whatever their verdict (the result's coverage).
        var analysed = CoveredRanges()
        var judged = 0
        var skipped = 0
        var planned = 1
        var mediaTime = 0.0
        var damage: String?
        // Coarse to fine: the picks' times (actual once decoded) and states, and per stretch
        // (pick j to pick j+1; the last one to the end) its fill.
        var pickTime: [Double] = []
        var pickState: [PickState] = []
        var pickRecord: [Int?] = []
        var stretchDone: [Bool] = []
        var stretchComplete: [Bool] = []
        var stretchPending: [Int] = []
        var stretchLastSample: [Double?] = []
    }

    /// How samples are judged: on the analyzer's workers (always, outside the benchmark), on the
    /// decoding thread with the time measured, or not at all (the benchmark's decoding alone).
    enum Judging: Sendable { case workers, inline, none }
    let judging: Judging
    /// CPU time spent in the models when judging inline, nanoseconds.
    let inferenceCPU = Atomic<UInt64>(0)

    init(handler: VideoAnalysisHandler, file: MediaFile, info: VideoDecoder.Info, gap: Double, rule: VideoSamplingRule = .standard,
         judging: Judging = .workers) {
        self.judging = judging
        self.rule = rule
        self.handler = handler
        self.file = file
        self.info = info
        self.gap = gap
        duration = info.duration
        frameDuration = 1 / (info.frameRate ?? 25)
        skipIdentical = handler.options.skipIdenticalFrames ?? true
        allRanges = handler.options.allFlaggedRanges
    }

    var analyzer: SensitivityAnalyzer { handler.analyzer }

    /// Whether the decoders should stop taking samples: a frame was flagged (and early exit is
    /// on), or something failed.
    var stopping: Bool { state.withLock { ($0.flagged && !allRanges) || $0.failure != nil } }

    // MARK: - Judging

    /// Hands `sample` to the models, on the analyzer's workers behind any picture; `judged` runs
    /// under the lock with the verdict. Returns the sample's record.
    @discardableResult
    func submit(_ sample: VideoDecoder.Sample, judged: @escaping @Sendable (inout State, Bool) -> Void = { _, _ in }) -> Int {
        inFlight.wait()
        pending.enter()
        let id = state.withLock { s -> Int in
            s.records.append(Record(time: sample.time))
            s.mediaTime = max(s.mediaTime, sample.time)
            return s.records.count - 1
        }
        let decoded = DecodedImage(image: sample.image, originalWidth: sample.displayWidth, originalHeight: sample.displayHeight, type: file.type)
        let identity = file.identity, path = handler.path, policy = handler.policy
        let job: @Sendable () -> Void = { [self, analyzer] in
            defer { inFlight.signal(); pending.leave() }
            do {
                // A file that changed (size or modification time, one fstat) stops here, at its
                // next sample, not after every sample of a file that will be refused anyway
                // (`changedDuringRead`; the check after the last sample stays).
                try file.verifyUnchanged()
                if judging == .none {
                    state.withLock { s in s.judged += 1; judged(&s, false) }
                    return
                }
                let cpuBefore = judging == .inline ? qsys_thread_cpu_ns() : 0
                let analysis = try analyzer.analyze(decoded, path: path, identity: identity, policy: policy)
                if judging == .inline { inferenceCPU.wrappingAdd(qsys_thread_cpu_ns() - cpuBefore, ordering: .relaxed) }
                state.withLock { s in
                    s.records[id].analysis = analysis
                    if analysis.isSensitive {
                        s.records[id].frame = decoded.image
                        s.flagged = true
                    }
                    s.judged += 1
                    judged(&s, analysis.isSensitive)
                }
                publish()
            } catch {
                state.withLock { s in if s.failure == nil { s.failure = error } }
            }
        }
        if judging == .workers { analyzer.pool.enqueue(background: true, job) } else { job() }
        return id
    }

    /// Records `sample` as sharing the verdict of record `reference` (no inference).
    func skip(_ sample: VideoDecoder.Sample, sameAs reference: Int) {
        state.withLock { s in
            s.records.append(Record(time: sample.time, sameAs: reference))
            s.mediaTime = max(s.mediaTime, sample.time)
            s.skipped += 1
            s.judged += 1
        }
        publish()
    }

    /// The record that judged record `id`: itself, or for a skipped sample its reference's.
    func judgedBy(_ s: State, _ id: Int) -> Record {
        var record = s.records[id]
        var hops = 0
        while record.analysis == nil, let reference = record.sameAs, hops < 1000 { record = s.records[reference]; hops += 1 }
        return record
    }

    /// The verdict of record `id` (a skipped sample's is its reference's).
    func verdict(_ s: State, _ id: Int) -> SensitivityAnalysis? { judgedBy(s, id).analysis }

    /// Whether `sample` may skip the models: practically identical to the last analysed frame.
    func skippable(_ thumbnail: GreyThumbnail?, after reference: (thumbnail: GreyThumbnail, record: Int)?) -> Int? {
        guard skipIdentical, let thumbnail, let reference, thumbnail.isPracticallyIdentical(to: reference.thumbnail) else { return nil }
        return reference.record
    }

    func thumbnail(_ sample: VideoDecoder.Sample) -> GreyThumbnail? { skipIdentical ? GreyThumbnail(sample.image) : nil }

    func publish(finished: Bool = false) {
        let progress = state.withLock { s -> VideoProgress in
            var fraction: Double? = nil
            if let duration, duration > 0 {
                fraction = finished ? 1 : min(0.99, s.pickState.isEmpty ? s.mediaTime / duration : Double(s.judged) / Double(max(1, s.planned)))
            }
            var progress = VideoProgress(fraction: fraction, samples: s.records.count, mediaTime: s.mediaTime, duration: duration,
                                         estimatedSecondsRemaining: nil)
            progress.skippedSamples = s.skipped
            if let duration, duration > 0 { progress.coverage = s.analysed.fraction(of: duration) }
            progress.covered = s.flagged ? handler.progress.covered : s.analysed
            if let fraction {
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                progress.estimatedSecondsRemaining = finished ? 0 : fraction > 0.02 ? elapsed * (1 - fraction) / fraction : nil
            }
            return progress
        }
        handler.publish(progress)
    }

    // MARK: - Coarse to fine

    /// Keyframes spread over the file first, then the stretches between them filled in (two
    /// decoders at once when `second` gives one); after a flagged frame (early exit), the
    /// stretch before it is searched for the onset.
    func coarseToFine(_ first: VideoDecoder, second: () throws -> VideoDecoder?) throws -> VideoSensitivityAnalysis {
        let keyframes = first.keyframeTimes
        let plan = VideoPlan(keyframes: keyframes, maxGap: gap)
        let count = plan.picks.count
        let end = duration ?? 0
        let resumed = handler.options.alreadyCovered ?? CoveredRanges()
        state.withLock { s in
            s.pickTime = plan.times
            s.pickState = Array(repeating: .unknown, count: count)
            s.pickRecord = Array(repeating: nil, count: count)
            s.stretchDone = Array(repeating: false, count: count)
            s.stretchComplete = Array(repeating: false, count: count)
            s.stretchPending = Array(repeating: 0, count: count)
            s.stretchLastSample = Array(repeating: nil, count: count)
            s.analysed = resumed
            var planned = 0
            for j in 0..<count {
                let low = plan.times[j], high = j + 1 < count ? plan.times[j + 1] : end
                // Index times can be decode times, up to a few frames before the frame is shown.
                if resumed.covers(min(low + 0.5, high)...high) {
                    s.stretchDone[j] = true
                    s.stretchComplete[j] = true
                }
                if resumed.contains(low) || (j > 0 && s.stretchDone[j - 1] && s.stretchDone[j]) {
                    s.pickState[j] = .judged
                } else {
                    planned += 1
                }
                // A fill's samples are the gap apart, less a frame at most (each is the latest frame within it).
                if !s.stretchDone[j] { planned += max(0, Int(((high - low) / max(gap / 2, gap - frameDuration)).rounded(.up)) - 1) }
            }
            s.planned = max(1, planned)
        }
        var decoders = [first]
        if let another = try second() { decoders.append(another) }

        // Coarse: keyframes alone, spread over the file.
        let thumbnails = Locked<[Int: GreyThumbnail]>([:])
        let coarse = plan.coarseOrder.filter { j in state.withLock { $0.pickState[j] == .unknown } }
        try runInParallel(decoders, tasks: coarse) { decoder, j in
            guard !self.stopping else { return false }
            guard let sample = try decoder.decodeKeyframe(plan.picks[j]) else {
                self.state.withLock { s in
                    s.pickState[j] = .failed
                    s.noteDamage("the keyframe at \(VideoDecoder.clock(plan.times[j])) cannot be decoded")
                }
                return true
            }
            if let thumbnail = self.thumbnail(sample) { thumbnails.withLock { $0[j] = thumbnail } }
            self.state.withLock { s in
                s.pickTime[j] = sample.time
                s.pickState[j] = .submitted
            }
            let id = self.submit(sample) { s, _ in
                s.pickState[j] = .judged
                self.settle(&s, j - 1)
                self.settle(&s, j)
            }
            self.state.withLock { $0.pickRecord[j] = id }
            return true
        }

        // Fine: each stretch from its keyframe, until no two samples are more than the gap apart.
        let fills = (0..<count).filter { j in state.withLock { !$0.stretchDone[j] } }
        try runInParallel(decoders, tasks: fills) { decoder, j in
            guard !self.stopping else { return false }
            let (start, stop, keyframeState, keyframeRecord) = self.state.withLock { s in
                (s.pickTime[j], j + 1 < count ? s.pickTime[j + 1] : end - self.frameDuration, s.pickState[j], s.pickRecord[j])
            }
            if stop - start <= self.gap + 1e-6 && keyframeState != .failed {
                self.state.withLock { s in
                    s.stretchDone[j] = true
                    s.stretchComplete[j] = true
                    self.settle(&s, j)
                }
                return true
            }
            var reference = keyframeRecord.flatMap { id in thumbnails.withLock { $0[j] }.map { (thumbnail: $0, record: id) } }
            let stretch = try decoder.fill(fromKeyframe: plan.picks[j], start: start, end: stop, maxGap: self.gap,
                                           sampleKeyframe: keyframeState == .failed) { sample in
                guard !self.stopping else { return false }
                let thumbnail = self.thumbnail(sample)
                self.state.withLock { $0.stretchLastSample[j] = sample.time }
                if let same = self.skippable(thumbnail, after: reference) {
                    self.skip(sample, sameAs: same)
                    return true
                }
                self.state.withLock { $0.stretchPending[j] += 1 }
                let id = self.submit(sample) { s, _ in
                    s.stretchPending[j] -= 1
                    self.settle(&s, j)
                }
                if let thumbnail { reference = (thumbnail, id) }
                return true
            }
            self.state.withLock { s in
                if let damage = stretch.damage { s.noteDamage(damage) }
                if stretch.stopped { return }
                s.stretchDone[j] = true
                s.stretchComplete[j] = stretch.complete
                self.settle(&s, j)
            }
            return true
        }
        pending.wait()
        if let failure = state.withLock({ $0.failure }) { throw failure }
        if !allRanges && state.withLock({ $0.flagged }) {
            try refine(first, keyframes: keyframes)
            pending.wait()
            if let failure = state.withLock({ $0.failure }) { throw failure }
        }
        return result(decoders: decoders.count, complete: state.withLock { s in s.stretchComplete.allSatisfy { $0 } && s.damage == nil })
    }

    /// Adds stretch `j` to the analysed ones once its fill is done, every sample in it judged, and
    /// its keyframe (and, for a complete one, the next) judged: to the next keyframe (the end, for
    /// the last stretch) when complete, else to its last sample.
    func settle(_ s: inout State, _ j: Int) {
        guard j >= 0, j < s.stretchDone.count, s.stretchDone[j], s.stretchPending[j] == 0, s.pickState[j] == .judged else { return }
        if j == 0 { s.analysed.insert(0...s.pickTime[0]) }
        let last = j + 1 == s.pickTime.count
        if s.stretchComplete[j] && (last || s.pickState[j + 1] == .judged) {
            s.analysed.insert(s.pickTime[j]...(last ? max(s.pickTime[j], duration ?? s.pickTime[j]) : s.pickTime[j + 1]))
        } else if let sample = s.stretchLastSample[j], sample >= s.pickTime[j] {
            s.analysed.insert(s.pickTime[j]...sample)
        }
    }

    /// After a flagged frame: the samples between the last clean one before it and it, at most
    /// the gap apart, judged until one is flagged (so the first flagged frame is found within the
    /// gap of where the content begins).
    func refine(_ decoder: VideoDecoder, keyframes: [Double]) throws {
        let (flaggedAt, cleanBefore) = state.withLock { s -> (Double?, Double?) in
            let verdicts = s.records.indices.map { (s.records[$0].time, verdict(s, $0)?.isSensitive) }
            let flagged = verdicts.filter { $0.1 == true }.map(\.0).min()
            let clean = flagged.flatMap { f in verdicts.filter { $0.1 == false && $0.0 < f }.map(\.0).max() }
            return (flagged, clean)
        }
        guard let flaggedAt, flaggedAt - (cleanBefore ?? keyframes[0]) > gap + 1e-6 || (cleanBefore == nil && flaggedAt > keyframes[0] + 1e-6) else { return }
        let from = cleanBefore ?? keyframes[0]
        let index = max(0, (keyframes.lastIndex { $0 <= from + 1e-3 }) ?? 0)
        _ = try decoder.fill(fromKeyframe: index, start: from, end: flaggedAt, maxGap: gap, sampleKeyframe: cleanBefore == nil) { sample in
            guard !state.withLock({ $0.refinementFlagged || $0.failure != nil }) else { return false }
            submit(sample) { s, sensitive in if sensitive { s.refinementFlagged = true } }
            return true
        }
    }

    // MARK: - Front to back

    /// A video without an index (or an animation): decoded front to back, samples at most the
    /// gap apart (``VideoDecoder/sample(maxGap:body:)``).
    func sequential(_ decoder: VideoDecoder) throws -> VideoSensitivityAnalysis {
        var reference: (thumbnail: GreyThumbnail, record: Int)? = nil
        let summary = try decoder.sample(maxGap: gap) { sample in
            guard !stopping else { return false }
            let thumbnail = self.thumbnail(sample)
            if let same = skippable(thumbnail, after: reference) {
                skip(sample, sameAs: same)
                return true
            }
            let id = submit(sample)
            if let thumbnail { reference = (thumbnail, id) }
            return true
        }
        pending.wait()
        if let failure = state.withLock({ $0.failure }) { throw failure }
        state.withLock { s in
            if let reason = summary.endReason, summary.endedEarly { s.noteDamage(reason) }
            guard let duration, duration > 0 else { return }
            let complete = !summary.endedEarly && !(s.flagged && !allRanges)
            s.analysed.insert(0...(complete ? duration : min(duration, summary.reachedTime + frameDuration)))
        }
        return result(decoders: 1, complete: !summary.endedEarly && !(state.withLock { $0.flagged } && !allRanges), largestGap: summary.largestGap)
    }

    // MARK: - Verdict

    func result(decoders: Int, complete: Bool, largestGap knownGap: Double? = nil) -> VideoSensitivityAnalysis {
        let (records, judged, analysed, damage, skipped) = state.withLock { s in
            (s.records, s.records.indices.map { judgedBy(s, $0) }, s.analysed, s.damage, s.skipped)
        }
        let verdicts = judged.map(\.analysis)
        let order = records.indices.sorted { records[$0].time < records[$1].time }
        let firstFlagged = order.first { verdicts[$0]?.isSensitive == true }
        var ranges: [ClosedRange<Double>] = []
        var rangeStart: Double? = nil, lastFlagged = 0.0
        for i in order {
            if verdicts[i]?.isSensitive == true {
                if rangeStart == nil { rangeStart = records[i].time }
                lastFlagged = records[i].time
            } else if let begin = rangeStart {
                ranges.append(begin...lastFlagged)
                rangeStart = nil
            }
        }
        if let begin = rangeStart { ranges.append(begin...lastFlagged) }
        let largestGap = knownGap ?? Self.largestGap(samples: order.map { records[$0].time }, resumed: handler.options.alreadyCovered ?? CoveredRanges(),
                                                     end: complete ? duration.map { $0 - frameDuration } : nil)
        var coverage: Double? = nil
        if let duration, duration > 0 { coverage = complete && !(firstFlagged != nil && !allRanges) ? 1 : analysed.fraction(of: duration) }
        let flagged = firstFlagged.flatMap { verdicts[$0] }
        // The flagged frame itself for the preview: the record's, or its reference's.
        let frame = firstFlagged.flatMap { judged[$0].frame }
        publish(finished: true)
        return VideoSensitivityAnalysis(
            isSensitive: flagged != nil, frameTime: firstFlagged.map { records[$0].time }, detections: flagged?.detections ?? [],
            nsfwScore: flagged?.nsfwScore, reasons: flagged?.reasons ?? [], flaggedFrame: frame,
            flaggedRanges: ranges, samples: records.count, duration: duration, coverage: coverage,
            skippedSamples: skipped, largestGap: largestGap, samplingRule: rule, plannedGap: gap, endedEarly: damage != nil, endReason: damage,
            info: info, mode: handler.policy.mode, decoders: decoders)
    }

    /// The largest distance between analysed frames, seconds: between consecutive `samples`
    /// (media times), from the start, and to `end` (the last frame, for a complete analysis).
    /// A stretch an earlier run covered (`resumed`) counts as analysed throughout: every frame
    /// in it was within the gap of a frame that run judged. (Taking only the samples and leaving
    /// out gaps wholly inside a covered stretch reported 10.24 s where 2 s was kept: a stretch
    /// covered before, 8 s between two keyframes that run judged, lay between this run's last
    /// sample before it and its first after it.)
    static func largestGap(samples: [Double], resumed: CoveredRanges, end: Double?) -> Double {
        var spans = samples.map { $0...$0 } + resumed.ranges
        spans.sort { $0.lowerBound < $1.lowerBound }
        var reached = 0.0, largest = 0.0
        for span in spans {
            largest = max(largest, span.lowerBound - reached)
            reached = max(reached, span.upperBound)
        }
        if let end { largest = max(largest, end - reached) }
        return largest
    }

    // MARK: - Threads

    /// Runs `body` for each of `tasks`, taken in order by as many threads as `decoders` (this one
    /// and one more per extra decoder), until the tasks run out or a body returns false. The
    /// first error ends every thread's work and is thrown.
    func runInParallel(_ decoders: [VideoDecoder], tasks: [Int], _ body: @escaping @Sendable (VideoDecoder, Int) throws -> Bool) throws {
        let next = Atomic<Int>(0)
        let failed = Locked<(any Error)?>(nil)
        let work: @Sendable (VideoDecoder) -> Void = { decoder in
            while failed.withLock({ $0 == nil }) {
                let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard i < tasks.count else { return }
                do {
                    guard try body(decoder, tasks[i]) else { return }
                } catch {
                    failed.withLock { if $0 == nil { $0 = error } }
                    for other in decoders where other !== decoder { other.cancel() }
                    return
                }
            }
        }
        let helpers = DispatchGroup()
        let lowPriority = analyzer.configuration.lowPriority
        for decoder in decoders.dropFirst() where tasks.count > 1 {
            helpers.enter()
            let thread = Thread {
                qsys_set_thread_name("video-decode")
                if lowPriority { _ = qsys_lower_thread_priority(10) }
                work(decoder)
                helpers.leave()
            }
            thread.stackSize = 4 << 20
            thread.start()
        }
        work(decoders[0])
        helpers.wait()
        if let error = failed.withLock({ $0 }) {
            // A decoder cancelled because the other failed reports the other's error.
            throw error
        }
    }

}

extension VideoRun.State {
    /// Keeps the first damage met (the verdict's partial-coverage reason).
    mutating func noteDamage(_ reason: String) { if damage == nil { damage = reason } }
}

/// A 32x32 grey thumbnail of a frame, to tell a repeated picture (a slideshow, a screen
/// recording, a still scene) from a changed one. Two are "practically identical" only when
/// their cells differ by at most 1 level on average and no cell by more than 4 (of 255): any
/// change that covers even a fraction of one cell (1/1024 of the picture) at visible contrast
/// fails the second test.
struct GreyThumbnail: Sendable {
    static let side = 32
    let cells: [Float]

    init(_ image: RGBImage) {
        let side = Self.side
        var sums = [Float](repeating: 0, count: side * side)
        var counts = [Float](repeating: 0, count: side * side)
        image.pixels.withUnsafeBufferPointer { px in
            for y in 0..<image.height {
                let row = min(side - 1, y * side / max(1, image.height)) * side
                var p = y * image.width * 3
                for x in 0..<image.width {
                    let cell = row + min(side - 1, x * side / max(1, image.width))
                    // Rec. 601 luma, in integers.
                    sums[cell] += Float(Int(px[p]) * 77 + Int(px[p + 1]) * 150 + Int(px[p + 2]) * 29) / 256
                    counts[cell] += 1
                    p += 3
                }
            }
        }
        cells = zip(sums, counts).map { $1 > 0 ? $0 / $1 : 0 }
    }

    static let meanLimit: Float = 1
    static let cellLimit: Float = 4

    func isPracticallyIdentical(to other: GreyThumbnail) -> Bool {
        var total: Float = 0
        for i in cells.indices {
            let difference = abs(cells[i] - other.cells[i])
            if difference > Self.cellLimit { return false }
            total += difference
        }
        return total / Float(cells.count) <= Self.meanLimit
    }
}
