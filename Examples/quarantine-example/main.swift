// An application using the SensitivityAnalysis library the way Apple's SensitiveContentAnalysis
// is used: the policy in force, a picture, a video with progress, and a live stream.
//
//     swift run quarantine-example PICTURE
//     swift run quarantine-example VIDEO
//     swift run quarantine-example --stream VIDEO|/dev/videoN|-
//
// It loads the runtime and the models itself (installed by 'make setup'), in adult mode.
import Foundation
import MediaDecoding
import SensitivityAnalysis

let arguments = Array(CommandLine.arguments.dropFirst())
guard let path = arguments.last, arguments.count == 1 || (arguments.count == 2 && arguments[0] == "--stream") else {
    FileHandle.standardError.write(Data("usage: quarantine-example [--stream] PICTURE|VIDEO|/dev/videoN|-\n".utf8))
    exit(2)
}

do {
    let analyzer = try SensitivityAnalyzer(policy: .defaults(for: .adult))
    print("analysis policy: \(analyzer.analysisPolicy)")

    if arguments.count == 2 {
        // A live stream: frames go in as they arrive, advice comes out as it changes.
        let stream = analyzer.videoStreamAnalyzer(participantUUID: UUID().uuidString, streamDirection: .incoming)
        let advice = Task {
            for await change in stream.analysisChanges {
                print(String(format: "%7.2f s", change.mediaTime ?? 0), change.shouldIndicateSensitivity ? "blur" : "show",
                      change.shouldInterruptVideo ? "interrupt" : "", change.shouldMuteAudio ? "mute" : "", change.reasons.joined(separator: ", "))
            }
        }
        let source = try LiveVideoSource(input: path)
        // Reading and decoding block: a thread of their own, not Swift's cooperative pool.
        let read: LiveVideoSource.Summary = try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try source.run { stream.analyze(VideoStreamFrame($0)); return true } }) }.start()
        }
        let counts = await stream.end()
        await advice.value
        print("\(read.frames) frames read, \(counts.judged) judged, \(counts.dropped) dropped")
    } else if (try? MediaFile(path: path))?.type.kind == .video {
        let handler = analyzer.videoAnalysis(forFileAt: path)
        let progress = Task {
            for await p in handler.progressUpdates { print(String(format: "progress %3.0f%%", (p.fraction ?? 0) * 100)) }
        }
        let result = try await handler.hasSensitiveContent()
        await progress.value
        print(result.isSensitive ? "sensitive at \(result.frameTime ?? 0) s: \(result.reasons.joined(separator: ", "))" : "not sensitive")
    } else {
        let result = try await analyzer.analyzeImage(at: URL(fileURLWithPath: path))
        print(result.isSensitive ? "sensitive: \(result.reasons.joined(separator: ", "))" : "not sensitive")
    }
} catch {
    FileHandle.standardError.write(Data("quarantine-example: \(error)\n".utf8))
    exit(1)
}
