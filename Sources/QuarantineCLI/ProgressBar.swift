import Foundation
import PathBytes
import SensitivityAnalysis
import Locking

/// A one-line progress bar on standard error, drawn only on a terminal: files done, rate, ETA,
/// and for each video being analysed its percent, media time and ETA. Safe to update from any
/// thread (video progress arrives from the analysis tasks).
final class ProgressBar: Sendable {
    private struct State {
        var done = 0
        var lastDraw = Date.distantPast
        var videos: [String: VideoProgress] = [:]
    }
    private let total: Int
    private let enabled: Bool
    private let start = Date()
    private let state = Locked(State())

    init(total: Int, enabled: Bool) {
        self.total = total
        self.enabled = enabled
    }

    func advance(finished path: String) {
        state.withLock { s in
            s.done += 1
            s.videos[path] = nil
            draw(&s, force: s.done == total)
        }
    }

    func video(_ path: String, _ progress: VideoProgress) {
        state.withLock { s in
            s.videos[path] = progress
            draw(&s, force: false)
        }
    }

    /// Erases the bar, prints `line` to `handle`, and draws the bar again.
    func print(_ line: String, to handle: FileHandle) {
        state.withLock { s in
            if enabled { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            handle.write(Data((PathBytes.escapingRawBytes(line) + "\n").utf8))
            draw(&s, force: true)
        }
    }

    func clear() {
        guard enabled else { return }
        state.withLock { _ in FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }

    private func draw(_ s: inout State, force: Bool) {
        guard enabled, total > 1 || !s.videos.isEmpty else { return }
        let now = Date()
        guard force || now.timeIntervalSince(s.lastDraw) > 0.1 else { return }
        s.lastDraw = now
        let elapsed = now.timeIntervalSince(start)
        let rate = elapsed > 0 ? Double(s.done) / elapsed : 0
        var line = "\r"
        if total > 1 {
            let width = 24
            let filled = total > 0 ? width * s.done / total : width
            line += String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            line += " \(s.done)/\(total) files  \(String(format: "%.1f", rate))/s"
            if rate > 0, s.done < total, s.videos.isEmpty { line += "  ETA \(Self.duration(Double(total - s.done) / rate))" }
        }
        for (path, p) in s.videos.sorted(by: { $0.key < $1.key }).prefix(2) {
            let name = (path as NSString).lastPathComponent
            line += "  \(name.count > 24 ? String(name.prefix(21)) + "..." : name) "
            if let f = p.fraction { line += "\(Int(f * 100))% " }
            if let coverage = p.coverage, let d = p.duration {
                // Coarse to fine: keyframes over the whole file first, then the gaps filled in.
                line += "covered \(Int(coverage * 100))% of \(Self.duration(d))"
            } else {
                line += Self.duration(p.mediaTime)
                if let d = p.duration { line += "/\(Self.duration(d))" }
            }
            if let eta = p.estimatedSecondsRemaining { line += " ETA \(Self.duration(eta))" }
        }
        FileHandle.standardError.write(Data((line + "\u{1B}[K").utf8))
    }

    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
    }
}
