import Foundation

/// A one-line progress bar on standard error, drawn only on a terminal: count, rate and ETA.
final class ProgressBar {
    private let total: Int
    private let enabled: Bool
    private let start = Date()
    private var lastDraw = Date.distantPast
    private(set) var done = 0

    init(total: Int, enabled: Bool) {
        self.total = total
        self.enabled = enabled && total > 1
    }

    func advance() {
        done += 1
        draw(force: done == total)
    }

    /// Erases the bar so a normal line can be printed.
    func clear() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }

    func redraw() { draw(force: true) }

    private func draw(force: Bool) {
        guard enabled else { return }
        let now = Date()
        guard force || now.timeIntervalSince(lastDraw) > 0.1 else { return }
        lastDraw = now
        let elapsed = now.timeIntervalSince(start)
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let width = 30
        let filled = total > 0 ? width * done / total : width
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        var line = "\r\(bar) \(done)/\(total) files  \(String(format: "%.1f", rate))/s"
        if rate > 0, done < total { line += "  ETA \(Self.duration(Double(total - done) / rate))" }
        FileHandle.standardError.write(Data((line + "\u{1B}[K").utf8))
    }

    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
    }
}
