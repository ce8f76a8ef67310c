import Foundation
import SensitivityAnalysis

extension GuardianWire {
    /// `analyze`: the protected account's session forwarder (`quarantine session-forwarder`)
    /// passes one open descriptor of a picture or a video an application gave it, and the
    /// service judges its bytes with the account's own sandboxed worker under the account's
    /// policy, as it judges arrivals. The only verb whose request carries a descriptor: exactly
    /// one, open for reading, of a regular file (not a FIFO, socket, device or directory; not
    /// O_PATH or write-only), only from the protected account itself. One analysis per
    /// connection: a video's answers are zero or more ``Answer/progress`` messages, then the
    /// final one (``Answer/verdict`` or ``Answer/failure``); the service closes the connection
    /// after it, and a client that closes it first cancels the analysis.
    public struct Analyze: GuardianRequest {
        public static let verb = GuardianVerb.analyze
        public static let fields: Set<String> = ["kind"]

        /// What the application asked for: `AnalyzeImage` or `AnalyzeVideo`.
        public enum Kind: String, Codable, Sendable { case image, video }
        public var kind: Kind
        public init(kind: Kind) { self.kind = kind }

        /// One region that made a picture sensitive (pixels).
        public struct Box: Codable, Sendable, Equatable {
            public var label: String
            public var score: Double
            public var x: Double, y: Double, width: Double, height: Double
            public init(label: String, score: Double, x: Double, y: Double, width: Double, height: Double) {
                self.label = label
                self.score = score
                self.x = x
                self.y = y
                self.width = width
                self.height = height
            }
        }

        /// The verdict: `AnalyzeImage`'s reply, or a video job's `Finished`.
        public struct Verdict: Codable, Sendable, Equatable {
            public var sensitive: Bool
            /// "FEMALE_BREAST_EXPOSED 0.83", ...
            public var reasons: [String]
            /// A picture's boxes (those that counted under the policy).
            public var boxes: [Box]
            /// How long the judging took in the service, milliseconds.
            public var milliseconds: Double
            /// A video's first flagged frame, media seconds; -1 when none (pictures: -1).
            public var flaggedTime: Double
            /// A video's flagged stretches, `[[start, end], ...]`.
            public var flaggedRanges: [[Double]]
            public init(sensitive: Bool, reasons: [String], boxes: [Box] = [], milliseconds: Double, flaggedTime: Double = -1, flaggedRanges: [[Double]] = []) {
                self.sensitive = sensitive
                self.reasons = reasons
                self.boxes = boxes
                self.milliseconds = milliseconds
                self.flaggedTime = flaggedTime
                self.flaggedRanges = flaggedRanges
            }
        }

        /// Why there is no verdict: the kind names the D-Bus error the forwarder answers with,
        /// `code` is the file report's (a video job's `Failed` code).
        public struct Failure: Codable, Sendable, Equatable, Error {
            public enum Kind: String, Codable, Sendable {
                /// The descriptor is not one the service reads (not open for reading, not a regular file, ...).
                case invalidDescriptor
                /// Over a bound: the file's size, or analyses in flight for the account.
                case limitsExceeded
                /// The bytes are not a picture (`AnalyzeImage`) or not a video (`AnalyzeVideo`).
                case notAPicture, notAVideo
                /// The bytes could not be judged.
                case cannotAnalyze
                /// The service cannot judge now (its worker is not running).
                case unavailable
            }
            public var kind: Kind
            public var code: String
            public var message: String
            public init(_ kind: Kind, code: String, _ message: String) {
                self.kind = kind
                self.code = code
                self.message = message
            }
        }

        /// One message of the answer: a video's progress, or the final verdict or failure.
        public struct Answer: Codable, Sendable, Equatable {
            public var progress: VideoProgress?
            public var verdict: Verdict?
            public var failure: Failure?
            /// The last message of this analysis (the connection closes after it).
            public var isFinal: Bool { progress == nil }
            public init(progress: VideoProgress? = nil, verdict: Verdict? = nil, failure: Failure? = nil) {
                self.progress = progress
                self.verdict = verdict
                self.failure = failure
            }
        }
    }
}

extension GuardianWire.Analyze {
    /// The refusal of an `analyze` request without its descriptor (or with more than one), or
    /// sent where nothing analyses (the local backend).
    public static let needsDescriptor = "an analyze request carries exactly one open descriptor of the file, and only a guardian service's socket analyses (on an account no guardian service protects, ask the agent on the session bus)"
}
