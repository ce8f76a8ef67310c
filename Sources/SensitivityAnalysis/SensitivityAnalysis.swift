import MediaDecoding

/// The result of analysing one file, in the vocabulary of Apple's SensitiveContentAnalysis.
public struct SensitivityAnalysis: Sendable, Codable {
    public var path: String
    /// What the bytes are: a picture, a video or something else.
    public var kind: MediaType.Kind
    public var type: MediaType
    /// Whether the policy in force judges it sensitive.
    public var isSensitive: Bool
    /// Regions found (NudeNet, or the test card), in the original picture's pixels.
    public var detections: [Detection]
    /// open_nsfw's probability for the whole picture (nil when not computed, e.g. the test card).
    public var nsfwScore: Double?
    /// Why it is sensitive, e.g. `FEMALE_BREAST_EXPOSED 0.83` or `open_nsfw 0.91`.
    public var reasons: [String]
    public var mode: AnalysisMode
    public var width: Int
    public var height: Int
    /// The file as it was read: the vault re-checks this before acting.
    public var identity: FileIdentity
    /// Wall time spent on this file, in milliseconds.
    public var elapsedMilliseconds: Double
    /// What the decision rules decided about the models' detections (nil: no rule looked at
    /// one): the ones let through stay in ``detections`` with their raw scores.
    public var rulings: [Ruling]? = nil

    // MARK: Videos (nil for pictures)

    /// Media time of the first flagged frame, seconds.
    public var frameTime: Double? = nil
    /// Frames sampled (every one judged: by the models, or as practically identical to the
    /// analysed frame before it).
    public var samples: Int? = nil
    /// Of those, the frames judged without the models (practically identical to the one before).
    public var skippedSamples: Int? = nil
    /// The largest distance between sampled frames, seconds (at most `video.max_gap` in a
    /// complete analysis, unless the video itself has no frame in between).
    public var largestGap: Double? = nil
    /// The sampling rule that set the gap (`animation`, `short_clip`, `standard`), and that gap
    /// in seconds: ``VideoSamplingRule``.
    public var samplingRule: String? = nil
    public var plannedGap: Double? = nil
    /// Duration in seconds, when known.
    public var duration: Double? = nil
    /// Fraction of the duration covered (below 1: truncated, damaged, or stopped at the first flag).
    public var coverage: Double? = nil
    /// Every flagged stretch as [start, end] seconds (with --all).
    public var flaggedRanges: [[Double]]? = nil
    /// Why the decoder stopped before the end, for a partial-coverage verdict.
    public var partialReason: String? = nil

    // MARK: Containers (nil for pictures and videos)

    /// The pictures and videos judged inside an archive or a document (pages of a PDF are not
    /// listed: see ``pages``), in the order they were judged; the flagged one last.
    public var entries: [ContainerEntry]? = nil
    /// A PDF's pages, and how many of them were judged (``ContainerLimits/pagePlan(count:)``).
    public var pages: Int? = nil
    public var pagesJudged: Int? = nil
    /// What document the container is, by its own markers ("EPUB", "DOCX", "OpenDocument text",
    /// "PDF"); nil for a plain archive.
    public var document: String? = nil

    public init(path: String, kind: MediaType.Kind, type: MediaType, isSensitive: Bool, detections: [Detection], nsfwScore: Double?,
                reasons: [String], mode: AnalysisMode, width: Int, height: Int, identity: FileIdentity, elapsedMilliseconds: Double) {
        self.path = path
        self.kind = kind
        self.type = type
        self.isSensitive = isSensitive
        self.detections = detections
        self.nsfwScore = nsfwScore
        self.reasons = reasons
        self.mode = mode
        self.width = width
        self.height = height
        self.identity = identity
        self.elapsedMilliseconds = elapsedMilliseconds
    }
}

extension SensitivityAnalysis {
    /// The history's words for a clean verdict: "not sensitive", with every detection a decision
    /// rule let through and its raw scores, so that a guardian sees what passed and why.
    public var cleanDetail: String {
        let letThrough = (rulings ?? []).filter { $0.outcome == .letThrough }
        return letThrough.isEmpty ? "not sensitive" : "not sensitive; " + letThrough.map(\.summary).joined(separator: "; ")
    }
}
