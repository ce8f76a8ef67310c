import CSystemShims
import Foundation
import Testing
@testable import AnalysisWorker

/// What a worker writes to its standard error: relayed into the service's log, its last lines
/// kept for when it dies of a signal; and the crash report a worker writes then.
@Suite("Worker error relay")
struct WorkerErrorRelayTests {
    @Test("the last lines are kept (at most 40, control characters made spaces) and handed over once the pipe ends")
    func keepsLastLines() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        let relay = WorkerErrorRelay.start(from: ends[0], pid: 4242)
        var text = (1...50).map { "line \($0)" }.joined(separator: "\n") + "\n"
        text += "crash: SIGILL (4)\u{1B}[2J\n" + "no newline at the end"
        let bytes = Array(text.utf8)
        #expect(write(ends[1], bytes, bytes.count) == bytes.count)
        close(ends[1])
        let lines = relay.lastLines(waitingUpTo: .seconds(10))
        #expect(lines.count == WorkerErrorRelay.maxTailLines)
        #expect(lines.first == "line 13" && lines.last == "no newline at the end", "\(lines)")
        #expect(lines.contains("crash: SIGILL (4) [2J"), "\(lines)")
    }

    @Test("the crash report names the signal and lists return addresses by library")
    func crashReport() {
        var buffer = [CChar](repeating: 0, count: 8192)
        let length = qsys_crash_report_format(SIGILL, &buffer, Int32(buffer.count))
        let report = String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #expect(report.hasPrefix("crash: SIGILL (4)"), "\(report)")
        #expect(report.contains("crash: #0 ") && report.contains("+0x"), "\(report)")
    }
}
