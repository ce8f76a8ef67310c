#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GuardianAPI
import Locking
import MediaDecoding
import QuarantineCore
import SensitivityAnalysis

/// Judges a picture or a video an application passed as an open descriptor, with an
/// ``AnalysisEngine`` under given settings: the guardian service's `analyze` verb (for the
/// protected account's session forwarder). The descriptor is checked before any byte is read
/// (``check(_:kind:)``): open for reading (not O_PATH, not write-only), a regular file (not a
/// FIFO, socket, device or directory), and of a bounded size.
public enum DescriptorJudge {
    public typealias Kind = GuardianWire.Analyze.Kind
    public typealias Verdict = GuardianWire.Analyze.Verdict
    public typealias Failure = GuardianWire.Analyze.Failure

    /// The largest video judged (a picture: ``MediaLimits/maxImageFileBytes``).
    public static let maxVideoBytes: Int64 = 8 << 30
    /// O_PATH (Linux, the same on x86-64 and arm64): Glibc's Swift module leaves it out.
    public static let openPathFlag: Int32 = 0o10000000

    /// Why the descriptor is not judged; nil when it may be. Reads nothing from it.
    public static func check(_ fd: Int32, kind: Kind) -> Failure? {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0 else { return Failure(.invalidDescriptor, code: "bad_descriptor", "the descriptor is not open") }
        guard flags & openPathFlag == 0, flags & O_ACCMODE != O_WRONLY else {
            return Failure(.invalidDescriptor, code: "not_readable", "the descriptor is not open for reading: open the file with O_RDONLY")
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return Failure(.invalidDescriptor, code: "bad_descriptor", "the descriptor cannot be examined") }
        guard info.st_mode & S_IFMT == S_IFREG else {
            return Failure(kind == .video ? .notAVideo : .invalidDescriptor, code: "not_regular_file",
                           "the descriptor is not a regular file (a pipe, socket, device or folder is not read): pass a file or a memfd")
        }
        let limit = kind == .video ? maxVideoBytes : Int64(MediaLimits.default.maxImageFileBytes)
        guard Int64(info.st_size) <= limit else {
            return Failure(.limitsExceeded, code: "too_large", "the file is \(info.st_size) bytes, over the limit of \(limit >> 20) MiB for a \(kind == .video ? "video" : "picture")")
        }
        guard info.st_size > 0 else { return Failure(.cannotAnalyze, code: "empty_file", "the file is empty") }
        return nil
    }

    /// A number for each judged descriptor's name (no two are alike in one process).
    static let serial = Locked<UInt64>(0)

    /// Judges the file open at `fd` (borrowed; checked first). A picture for `.image`, a video
    /// (judged to the end: every flagged stretch) for `.video`, with its progress.
    public static func judge(_ fd: Int32, kind: Kind, engine: any AnalysisEngine, settings given: Settings,
                             progress: @escaping @Sendable (VideoProgress) -> Void = { _ in }) async -> Result<Verdict, Failure> {
        if let refused = check(fd, kind: kind) { return .failure(refused) }
        let number = serial.withLock { $0 += 1; return $0 }
        // No path: the analysis reads only the descriptor passed for this name.
        let name = "app-analysis:\(getpid())-\(number)"
        guard MediaFile.PassedDescriptors.add(fd, for: name) else {
            return .failure(Failure(.cannotAnalyze, code: "error", "the descriptor could not be handed to the analysis"))
        }
        defer { MediaFile.PassedDescriptors.remove(name) }
        let started = ContinuousClock.now
        let type: MediaType
        do {
            type = try await engine.runBlocking(video: kind == .video) { try MediaFile(path: name).type }
        } catch {
            return .failure(cannotAnalyze(FileReport.Failure(error, path: name), name: name))
        }
        var settings = given
        switch kind {
        case .image:
            guard type.kind == .image else {
                return .failure(Failure(.notAPicture, code: "not_a_picture",
                                        type.kind == .video ? "this is a video: use AnalyzeVideo" : "these bytes are not a picture this agent reads (\(type.rawValue))"))
            }
        case .video:
            guard type.kind == .video || type == .gif || type == .png || type == .webp else {
                return .failure(Failure(.notAVideo, code: "not_a_video", "these bytes are not a video this agent reads (\(type.rawValue)); pictures go to AnalyzeImage"))
            }
            settings.video.allFlaggedRanges = true
        }
        var reported: @Sendable (VideoProgress) -> Void = { _ in }
        if kind == .video { reported = progress }
        let report = await engine.report(forFileAt: name, settings: settings, progress: reported)
        if Task.isCancelled { return .failure(Failure(.cannotAnalyze, code: "cancelled", "cancelled")) }
        guard let analysis = report.analysis else {
            return .failure(cannotAnalyze(report.failure ?? .init(code: "error", message: "no verdict"), name: name))
        }
        let elapsed = ContinuousClock.now - started
        let whole: Double = Double(elapsed.components.seconds) * 1000
        let milliseconds: Double = whole + Double(elapsed.components.attoseconds) / 1e15
        switch kind {
        case .image:
            return .success(Verdict(sensitive: analysis.isSensitive, reasons: analysis.reasons, boxes: boxes(analysis, policy: settings.policy), milliseconds: milliseconds))
        case .video:
            let pairs: [[Double]] = analysis.flaggedRanges ?? []
            var ranges: [[Double]] = []
            for pair in pairs where pair.count == 2 { ranges.append([pair[0], max(pair[0], pair[1])]) }
            let flaggedTime: Double = analysis.frameTime ?? -1
            return .success(Verdict(sensitive: analysis.isSensitive, reasons: analysis.reasons, milliseconds: milliseconds,
                                    flaggedTime: flaggedTime, flaggedRanges: ranges))
        }
    }

    /// The regions that made the picture sensitive, as ``AnalysisBus`` answers them.
    static func boxes(_ analysis: SensitivityAnalysis, policy: SensitivityPolicy) -> [GuardianWire.Analyze.Box] {
        analysis.detections.filter { d in
            analysis.reasons.contains { $0.hasPrefix(d.label + " ") }
                && (d.label == TestCard.label || policy.labelThresholds[d.label].map { d.score >= $0 } ?? false)
        }.map { .init(label: $0.label, score: $0.score, x: $0.box.x, y: $0.box.y, width: $0.box.width, height: $0.box.height) }
    }

    static func cannotAnalyze(_ failure: FileReport.Failure, name: String) -> Failure {
        // The name stands for a descriptor: the caller knows it as "the file".
        let message = failure.message.replacingOccurrences(of: name + ": ", with: "").replacingOccurrences(of: name, with: "the file")
        return Failure(.cannotAnalyze, code: failure.code, "\(failure.code): \(message)")
    }
}
