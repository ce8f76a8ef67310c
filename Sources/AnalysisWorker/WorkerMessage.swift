import DownloadOrigins
import Foundation
import MediaDecoding
import SensitivityAnalysis

/// What the service and its analysis worker say to each other over their SOCK_SEQPACKET pair.
/// Every message is one packet: a type byte, then JSON, except frame chunks (binary).
///
///     worker -> service  H hello:    the models are loaded (or why not)
///     service -> worker  Q request:  one file to judge, its descriptor passed with SCM_RIGHTS
///     worker -> service  G progress: how far a video's analysis got (for resuming, too)
///     worker -> service  F frame:    part of the flagged frame's pixels (for the blurred preview)
///     worker -> service  R report:   the verdict (after all of the frame's parts)
///     service -> worker  X cancel:   stop judging a file (a stop cancels the videos in flight)
///     service -> worker  Y history:  a browser history's copied bytes to look a download up in;
///                                    descriptors: its memory files (the database, then its -wal
///                                    and -journal when there are)
///     worker -> service  O origin:   what the history says (or why it could not be read)
enum WorkerMessage {
    enum Kind: UInt8 {
        case hello = 0x48    // H
        case request = 0x51  // Q
        case progress = 0x47 // G
        case frame = 0x46    // F
        case report = 0x52   // R
        case cancel = 0x58   // X
        case history = 0x59  // Y
        case origin = 0x4F   // O
    }

    /// A history lookup: the query, and which side files' descriptors follow the database's.
    struct HistoryRequest: Codable {
        var id: UInt64
        var query: HistoryQuery
        var hasWAL: Bool
        var hasJournal: Bool
    }

    /// A history lookup's answer: the match (nil: the history does not know the file), or why
    /// the history could not be read.
    struct HistoryAnswer: Codable {
        var id: UInt64
        var match: HistoryMatch?
        var problem: String?
    }

    struct Hello: Codable {
        var pid: Int32
        /// Why the worker cannot analyse (the models are missing, say); nil when it can.
        var error: String?
        /// How it is confined (its user, seccomp, Landlock or why not), for the service's log.
        var confinement: String?
    }

    struct Request: Codable {
        var id: UInt64
        /// The path the descriptor stands for (named in messages, never opened by the worker).
        var path: String
        var policy: SensitivityPolicy
        var video: VideoOptions
        /// Only a picture for the blurred preview, no verdict (a file hidden because it is
        /// blocked): sent back as the frame, with a report without analysis.
        var previewOnly: Bool? = nil
    }

    struct Cancel: Codable {
        var id: UInt64
    }

    struct Progress: Codable {
        var id: UInt64
        var fraction: Double?
        /// The whole progress of a video (coverage, the stretches covered).
        var video: VideoProgress?
    }

    /// A ``FileReport`` without its pixels (sent as frame chunks before it).
    struct Report: Codable {
        var id: UInt64
        var path: String
        var kind: MediaType.Kind
        var type: MediaType
        var analysis: SensitivityAnalysis?
        var failure: FileReport.Failure?
        var elapsedMilliseconds: Double
        var frameWidth: Int?
        var frameHeight: Int?

        init(id: UInt64, _ report: FileReport) {
            self.id = id
            path = report.path
            kind = report.kind
            type = report.type
            analysis = report.analysis
            failure = report.failure
            elapsedMilliseconds = report.elapsedMilliseconds
            frameWidth = report.flaggedFrame?.width
            frameHeight = report.flaggedFrame?.height
        }

        /// What is wrong with a report.
        struct Problem: Error, CustomStringConvertible {
            var description: String
        }

        /// The ``FileReport`` for the file at `path` (the service's own name for it; the
        /// report's is not believed), with `frame` as its flagged frame when the size adds up.
        /// Fails, never traps, when it does not: a size that is negative, overflows, is over
        /// `maxFrameBytes`, or does not match the bytes received.
        func fileReport(frame: [UInt8], path: String, maxFrameBytes: Int = WorkerMessage.maxFrameBytes) -> Result<FileReport, Problem> {
            var image: RGBImage?
            switch (frameWidth, frameHeight) {
            case (nil, nil):
                guard frame.isEmpty else { return .failure(Problem(description: "it sent \(frame.count) frame bytes for a report without a frame")) }
            case (let width?, let height?):
                guard width > 0, height > 0 else { return .failure(Problem(description: "it sent a frame of \(width)x\(height) pixels")) }
                let (area, overArea) = width.multipliedReportingOverflow(by: height)
                let (bytes, overBytes) = area.multipliedReportingOverflow(by: 3)
                guard !overArea, !overBytes, bytes <= maxFrameBytes else {
                    return .failure(Problem(description: "it sent a frame of \(width)x\(height) pixels, over \(maxFrameBytes) bytes"))
                }
                guard bytes == frame.count else {
                    return .failure(Problem(description: "it sent \(frame.count) frame bytes for \(width)x\(height) pixels (\(bytes) bytes)"))
                }
                image = RGBImage(width: width, height: height, pixels: frame)
            default:
                return .failure(Problem(description: "it sent a frame with a width or a height but not both"))
            }
            return .success(FileReport(path: path, kind: kind, type: type, analysis: analysis, failure: failure.map(Self.tame),
                                       elapsedMilliseconds: elapsedMilliseconds, flaggedFrame: image))
        }

        /// A failure as the service may log and store it: a code of lower-case letters, digits
        /// and `_` (at most 64, else `analysis_failed`), a message without control characters
        /// (no line a worker writes can pass for one of the service's log lines), at most 1,000.
        static func tame(_ failure: FileReport.Failure) -> FileReport.Failure {
            let plain = !failure.code.isEmpty && failure.code.utf8.count <= 64
                && failure.code.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
            let message = String(String.UnicodeScalarView(failure.message.unicodeScalars.prefix(1000).map {
                $0.properties.generalCategory == .control || $0 == "\u{2028}" || $0 == "\u{2029}" ? " " : $0
            }))
            return FileReport.Failure(code: plain ? failure.code : "analysis_failed", message: message)
        }
    }

    /// The most pixel bytes of one flagged frame (a 4096 x 4096 RGB picture): a worker sends no
    /// bigger frame (the report then has none, so no blurred preview), the service reads none.
    static let maxFrameBytes = 4096 * 4096 * 3

    /// Bytes of pixels in one frame packet (well under the socket's default buffer).
    static let frameChunk = 48 << 10
    /// Type byte + id (8) + offset (8).
    static let frameHeader = 17

    static func encode<T: Encodable>(_ kind: Kind, _ value: T) -> [UInt8] { TypedPacket.encode(kind.rawValue, value) }

    static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) -> T? { TypedPacket.body(type, bytes) }

    /// The frame packets for `pixels`: each carries the id and where its bytes go.
    static func framePackets(id: UInt64, pixels: [UInt8]) -> [[UInt8]] {
        stride(from: 0, to: pixels.count, by: frameChunk).map { offset in
            var packet = [Kind.frame.rawValue]
            withUnsafeBytes(of: id.littleEndian) { packet += $0 }
            withUnsafeBytes(of: UInt64(offset).littleEndian) { packet += $0 }
            packet += pixels[offset..<min(pixels.count, offset + frameChunk)]
            return packet
        }
    }

    /// The id, offset and bytes of a frame packet.
    /// nil for a packet too short, or an offset no `Int` holds (never a trap).
    static func frameParts(_ packet: [UInt8]) -> (id: UInt64, offset: Int, bytes: ArraySlice<UInt8>)? {
        guard packet.count >= frameHeader, packet.first == Kind.frame.rawValue else { return nil }
        func word(_ at: Int) -> UInt64 { packet[at..<at + 8].enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) } }
        guard let offset = Int(exactly: word(9)) else { return nil }
        return (word(1), offset, packet[frameHeader...])
    }
}
