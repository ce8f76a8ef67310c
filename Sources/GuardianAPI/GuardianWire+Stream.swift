import Foundation
import SensitivityAnalysis

extension GuardianWire {
    /// `stream`: a live stream of the protected account's applications (the session forwarder's
    /// `BeginStream`), judged by the service with the account's own sandboxed worker under the
    /// policy the service decides from the mode in force (`descriptive` for a child: the one rule,
    /// ``StreamInterventions``). One connection per stream, from the protected account only:
    ///
    /// - the client sends ``Step/begin`` (no descriptor); the service answers ``Answer/began``
    ///   with the policy, or a final ``Answer/failure`` (``Limits/streamsPerAccount`` streams
    ///   open already, nothing to judge with);
    /// - then any number of ``Step/frame`` messages, each with exactly one descriptor: a picture
    ///   file (a memfd) of at most ``Limits/maxFrameBytes``, open for reading, a regular file (the
    ///   `analyze` verb's checks); the service copies it at once and closes it. A frame that
    ///   comes while one waits pushes the waiting one out (dropped, counted). A frame message
    ///   with another count of descriptors, or a descriptor that fails the checks, ends the
    ///   stream (final ``Answer/failure``);
    /// - ``Step/continueStream`` (the application intervened) and ``Step/end`` (the frame
    ///   waiting is judged, the last changes sent, then a final ``Answer/ended``).
    ///
    /// The service sends ``Answer/change`` at each change of advice and ``Answer/counts`` every
    /// ``Limits/countsInterval`` while they change. A client that closes the connection ends
    /// the stream at once (judged no further).
    public struct LiveStream: GuardianRequest {
        public static let verb = GuardianVerb.stream
        public static let fields: Set<String> = ["step", "participant", "direction"]

        /// What the message asks.
        public enum Step: String, Codable, Sendable {
            case begin, frame
            case continueStream = "continue"
            case end
        }
        public var step: Step
        /// ``Step/begin`` only: the application's participant id and the stream's direction.
        public var participant: String?
        public var direction: VideoStreamAnalyzer.StreamDirection?

        public init(step: Step, participant: String? = nil, direction: VideoStreamAnalyzer.StreamDirection? = nil) {
            self.step = step
            self.participant = participant
            self.direction = direction
        }

        /// The service's bounds for one protected account's streams.
        public enum Limits {
            /// Streams open at once for the account (a third is refused).
            public static let streamsPerAccount = 2
            /// The largest frame file the service takes (raw frames are sent at analysis size,
            /// well under it).
            public static let maxFrameBytes = 8 << 20
            /// The longest participant id kept.
            public static let maxParticipant = 256
            /// How often the counts are sent while they change.
            public static let countsInterval: Duration = .milliseconds(500)
        }

        /// One change of advice (`AnalysisChanged`): the whole advice in force and why it changed.
        public struct Change: Codable, Sendable, Equatable {
            public var shouldIndicateSensitivity: Bool
            public var shouldInterruptVideo: Bool
            public var shouldMuteAudio: Bool
            /// `flagged`, `cleared`, `continued`, `failure`.
            public var cause: String
            public var reasons: [String]
            public init(shouldIndicateSensitivity: Bool, shouldInterruptVideo: Bool, shouldMuteAudio: Bool, cause: String, reasons: [String]) {
                self.shouldIndicateSensitivity = shouldIndicateSensitivity
                self.shouldInterruptVideo = shouldInterruptVideo
                self.shouldMuteAudio = shouldMuteAudio
                self.cause = cause
                self.reasons = reasons
            }
        }

        /// The stream's counts in the service.
        public struct Counts: Codable, Sendable, Equatable {
            /// Frames taken, judged, dropped (pushed out by newer ones), not judgeable.
            public var seen: Int, judged: Int, dropped: Int, failed: Int
            public init(seen: Int = 0, judged: Int = 0, dropped: Int = 0, failed: Int = 0) {
                self.seen = seen
                self.judged = judged
                self.dropped = dropped
                self.failed = failed
            }
        }

        /// One message from the service: exactly one of these is set.
        public struct Answer: Codable, Sendable, Equatable {
            /// The stream is open, judged under this policy (`descriptive`, `simple`).
            public var began: AnalysisPolicy?
            public var change: Change?
            public var counts: Counts?
            /// The stream ended after ``Step/end``: the final counts (the last message).
            public var ended: Counts?
            /// The stream was refused or ended by the service, and why (the last message).
            public var failure: Analyze.Failure?
            /// The last message of this stream (the connection closes after it).
            public var isFinal: Bool { ended != nil || failure != nil }
            public init(began: AnalysisPolicy? = nil, change: Change? = nil, counts: Counts? = nil, ended: Counts? = nil, failure: Analyze.Failure? = nil) {
                self.began = began
                self.change = change
                self.counts = counts
                self.ended = ended
                self.failure = failure
            }
        }

        /// The refusal of a `stream` request that reaches the route table: not a ``Step/begin``
        /// on a connection of its own, or sent where nothing analyses (the local backend).
        public static let needsConnection = "a stream begins with a 'begin' step on a connection of its own, and only a guardian service's socket judges streams (on an account no guardian service protects, ask the agent on the session bus)"
    }
}
