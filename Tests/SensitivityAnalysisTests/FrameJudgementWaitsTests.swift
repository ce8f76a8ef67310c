import Foundation
import Locking
import Testing
import TestSupport
@testable import SensitivityAnalysis

/// The blocking wait both service judges (the agent's worker, the guardian's) use for a frame.
@Suite("Frame judgement waits", .ownThread)
struct FrameJudgementWaitsTests {
    struct Refused: Error {}

    @Test("a run hands back the work's value or error; cancel() cancels the work under way (several threads) and refuses every later run")
    func runAndCancel() async throws {
        let waits = FrameJudgementWaits()
        #expect(try waits.run({ 7 })?.get() == 7)
        #expect(throws: Refused.self) { try waits.run({ () async throws -> Int in throw Refused() })?.get() }
        // Two runs waiting at once, on threads of their own, until cancelled.
        let ended = Locked<[String]>([])
        let threads = (0..<2).map { _ in
            Thread {
                let outcome = waits.run { () async throws -> Int in
                    try await Task.sleep(for: .seconds(20))
                    return 1
                }
                ended.withLock { $0.append(outcome.map { "\($0)" } ?? "refused") }
            }
        }
        threads.forEach { $0.start() }
        try await Task.sleep(for: .milliseconds(200))
        #expect(ended.withLock { $0 }.isEmpty, "a run ended before the cancel")
        let cancelled = ContinuousClock.now
        waits.cancel()
        for _ in 0..<250 where ended.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(20)) }
        #expect(ContinuousClock.now - cancelled < .seconds(5))
        #expect(ended.withLock { $0 }.count == 2 && ended.withLock { $0 }.allSatisfy { $0.contains("CancellationError") }, "\(ended.withLock { $0 })")
        #expect(waits.isCancelled)
        #expect(waits.run({ 7 }) == nil, "a run after the cancel was started")
    }
}
