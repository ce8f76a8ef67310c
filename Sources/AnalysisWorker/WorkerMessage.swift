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
enum WorkerMessage {
    enum Kind: UInt8 {
        case hello = 0x48    // H
        case request = 0x51  // Q
        case progress = 0x47 // G
        case frame = 0x46    // F
        case report = 0x52   // R
        case cancel = 0x58   // X
    }

    struct Hello: Codable {
        var pid: Int32
        /// Why the worker cannot analyse (the models are missing, say); nil when it can.
        var error: String?
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

        func fileReport(frame: [UInt8]?) -> FileReport {
            var image: RGBImage?
            if let frameWidth, let frameHeight, let frame, frameWidth > 0, frameHeight > 0, frame.count == frameWidth * frameHeight * 3 {
                image = RGBImage(width: frameWidth, height: frameHeight, pixels: frame)
            }
            return FileReport(path: path, kind: kind, type: type, analysis: analysis, failure: failure,
                              elapsedMilliseconds: elapsedMilliseconds, flaggedFrame: image)
        }
    }

    /// Bytes of pixels in one frame packet (well under the socket's default buffer).
    static let frameChunk = 48 << 10
    /// Type byte + id (8) + offset (8).
    static let frameHeader = 17

    static func encode<T: Encodable>(_ kind: Kind, _ value: T) -> [UInt8] {
        [kind.rawValue] + ((try? JSONEncoder().encode(value)).map { [UInt8]($0) } ?? [])
    }

    static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) -> T? {
        guard bytes.count > 1 else { return nil }
        return try? JSONDecoder().decode(type, from: Data(bytes[1...]))
    }

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
    static func frameParts(_ packet: [UInt8]) -> (id: UInt64, offset: Int, bytes: ArraySlice<UInt8>)? {
        guard packet.count >= frameHeader else { return nil }
        func word(_ at: Int) -> UInt64 { packet[at..<at + 8].enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) } }
        return (word(1), Int(word(9)), packet[frameHeader...])
    }
}
