import Foundation
import MediaDecoding
import QuarantineStore
import SensitivityAnalysis

/// `quarantine stream --blur-to`: writes every frame read to a ``LiveVideoSink``, strongly
/// blurred while the stream is flagged, failing closed.
///
/// Judging lags the frames and skips most of them, so a frame is held until a verdict vouches for
/// it: the verdict of the first judged frame at or after it (a picture still on screen then is
/// flagged, and the frames held before it are blurred with it). It is then written as it is when
/// that frame was judged, its verdict left no advice in force, and it came at most ``margin``
/// seconds of media time after the frame; it is blurred otherwise. A frame no verdict vouches for within ``hold`` wall seconds
/// (judging stalled) is written blurred. So the output lags the input by about one judgement, and
/// a picture can reach it unblurred only when it was on screen for less than ``margin`` seconds,
/// between two judged frames.
///
/// Blurred while the advice says indicate sensitivity or interrupt video: the adult policy
/// indicates at the first flagged frame (its interruption waits for 3), the child policy does
/// both at once, and a child's interruption stays blurred until it is acknowledged. The blur is
/// the vault's previews' (``BlurredPreview``: 6 px on the long side), enlarged to the frame's size.
///
/// The reader thread calls ``submit(_:)`` before it gives the frame to the analyzer; judging
/// threads call ``judged(_:)`` (through ``VideoStreamAnalyzer/observeJudgements(_:)``); a thread
/// of its own writes.
final class BlurredStreamWriter: @unchecked Sendable {
    /// What was written.
    struct Summary: Sendable, Equatable {
        var written = 0
        /// Written blurred because of the advice in force.
        var blurredFlagged = 0
        /// Written blurred because no verdict came in time, or the one that came was too far on.
        var blurredUnjudged = 0
        /// Wall seconds frames were held before being written (waiting for their verdict, or for
        /// the destination): the longest and the mean.
        var longestHold = 0.0
        var meanHold = 0.0
    }

    struct Held {
        var frame: LiveVideoSource.Frame
        var arrived: UInt64
    }

    struct Vouch {
        var index: Int
        var time: Double
        /// The advice in force after it says blur.
        var advised: Bool
        /// The frame could not be judged: it vouches for nothing.
        var failed: Bool
    }

    let sink: LiveVideoSink
    /// Media seconds a verdict may come after a frame and still vouch for it unblurred.
    let margin: Double
    /// Wall seconds a frame waits for a verdict before it is written blurred.
    let hold: Double
    /// Frames held at most; the reader waits beyond (a destination that does not keep up).
    let capacity: Int
    let condition = NSCondition()
    var held: [Held] = []
    var heldStart = 0
    var vouches: [Vouch] = []
    var ended = false
    var failure: MediaError?
    var summary = Summary()
    var totalHold = 0.0
    var done = false

    /// `capacity` defaults to the frames that fit in 128 MiB (a frame held is its original and its
    /// analysis picture): 56 at 720p, 388 at 320x240.
    init(sink: LiveVideoSink, margin: Double = 0.5, hold: Double = 1.0, capacity: Int? = nil) {
        self.sink = sink
        self.margin = margin
        self.hold = hold
        let pixels = sink.width * sink.height
        self.capacity = capacity ?? max(8, (128 << 20) / max(1, pixels * 3 / 2 + min(pixels, 640 * 512) * 3))
        let thread = Thread { [self] in loop() }
        thread.name = "stream-writer"
        thread.start()
    }

    /// Holds `frame` for its verdict; false once writing has failed (stop reading).
    func submit(_ frame: LiveVideoSource.Frame) -> Bool {
        let now = DispatchTime.now().uptimeNanoseconds
        condition.lock()
        defer { condition.unlock() }
        while held.count - heldStart >= capacity && failure == nil { condition.wait() }
        guard failure == nil else { return false }
        held.append(Held(frame: frame, arrived: now))
        condition.broadcast()
        return true
    }

    /// A verdict was applied (a judging thread, under the analyzer's lock: quick).
    func judged(_ judgement: VideoStreamAnalyzer.Judgement) {
        let advised = judgement.advice.indicate || judgement.advice.interrupt
        condition.lock()
        vouches.append(Vouch(index: judgement.frameIndex, time: judgement.mediaTime, advised: advised, failed: judgement.failed))
        condition.broadcast()
        condition.unlock()
    }

    /// No more frames or verdicts: writes what is held, the container's end, and returns the counts.
    func finish() throws(MediaError) -> Summary {
        condition.lock()
        ended = true
        condition.broadcast()
        while !done { condition.wait() }
        let result = summary, failed = failure
        condition.unlock()
        if let failed { throw failed }
        try sink.finish()
        return result
    }

    /// The writing thread: takes the oldest held frame once a verdict vouches for it (or it has
    /// waited too long), writes it, and so on.
    func loop() {
        condition.lock()
        while true {
            guard heldStart < held.count else {
                if ended { break }
                condition.wait()
                continue
            }
            let head = held[heldStart]
            var dropped = 0
            while dropped < vouches.count && vouches[dropped].index < head.frame.index { dropped += 1 }
            if dropped > 0 { vouches.removeFirst(dropped) }
            let now = DispatchTime.now().uptimeNanoseconds
            let waited = Double(now - min(now, head.arrived)) / 1e9
            let blur: Bool, flagged: Bool
            if let vouch = vouches.first {
                // A frame that could not be judged vouches for nothing: those it covers are blurred.
                flagged = vouch.advised
                blur = vouch.advised || vouch.failed || vouch.time - head.frame.time > margin
            } else if ended || waited >= hold {
                flagged = false
                blur = true
            } else {
                _ = condition.wait(until: Date(timeIntervalSinceNow: hold - waited))
                continue
            }
            heldStart += 1
            if heldStart > 64 && heldStart * 2 > held.count {
                held.removeFirst(heldStart)
                heldStart = 0
            }
            condition.broadcast()
            condition.unlock()
            let outcome = Result { () throws(MediaError) in try write(head.frame, blurred: blur) }
            condition.lock()
            if case .failure(let error) = outcome {
                failure = error
                held.removeAll()
                heldStart = 0
                condition.broadcast()
                break
            }
            summary.written += 1
            if blur { if flagged { summary.blurredFlagged += 1 } else { summary.blurredUnjudged += 1 } }
            summary.longestHold = max(summary.longestHold, waited)
            totalHold += waited
            summary.meanHold = totalHold / Double(summary.written)
        }
        done = true
        condition.broadcast()
        condition.unlock()
    }

    func write(_ frame: LiveVideoSource.Frame, blurred: Bool) throws(MediaError) {
        if blurred {
            try sink.write(BlurredPreview.image(from: frame.image()), time: frame.time)
        } else if let original = frame.original, original.width == sink.width, original.height == sink.height {
            try sink.write(original, time: frame.time)
        } else {
            // A frame of another size than the first (a camera that changed resolution): scaled.
            try sink.write(frame.image(), time: frame.time)
        }
    }
}
