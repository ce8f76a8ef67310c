import Foundation
import ServiceSupport
import Testing

/// FairShare: one caller's many requests never go in front of another caller's next one.
@Suite("FairShare")
struct FairShareTests {
    /// Work that waits until the test lets it end, recording when it started.
    final class Gates: @unchecked Sendable {
        let lock = NSLock()
        var started: [String] = []
        var open: Set<String> = []

        func run(_ name: String) async {
            lock.withLock { started.append(name) }
            while !lock.withLock({ open.contains(name) }) { try? await Task.sleep(for: .milliseconds(5)) }
        }

        func finish(_ name: String) { lock.withLock { _ = open.insert(name) } }
        var order: [String] { lock.withLock { started } }

        func waitStarted(_ count: Int) async {
            for _ in 0..<2000 where order.count < count { try? await Task.sleep(for: .milliseconds(5)) }
        }
    }

    @Test("one slot: a caller with three requests waiting lets another caller's one go next")
    func turns() async throws {
        let share = FairShare(slots: 1)
        let gates = Gates()
        var tasks: [Task<Void, any Error>] = []
        tasks.append(Task { try await share.run(caller: "A") { await gates.run("A1") } })
        await gates.waitStarted(1)
        for name in ["A2", "A3"] {
            tasks.append(Task { try await share.run(caller: "A") { await gates.run(name) } })
            while share.load.waiting < (name == "A2" ? 1 : 2) { try await Task.sleep(for: .milliseconds(5)) }
        }
        tasks.append(Task { try await share.run(caller: "B") { await gates.run("B1") } })
        while share.load.waiting < 3 { try await Task.sleep(for: .milliseconds(5)) }
        for (index, name) in ["A1", "B1", "A2", "A3"].enumerated() {
            await gates.waitStarted(index + 1)
            #expect(share.load.running == 1)
            gates.finish(name)
        }
        for task in tasks { try await task.value }
        #expect(gates.order == ["A1", "B1", "A2", "A3"])
        #expect(share.load.running == 0 && share.load.waiting == 0)
    }

    @Test("a request cancelled while it waits leaves the line at once; the others go on")
    func cancelledWhileWaiting() async throws {
        let share = FairShare(slots: 1)
        let gates = Gates()
        let first = Task { try await share.run(caller: "A") { await gates.run("A1") } }
        await gates.waitStarted(1)
        let waiting = Task { try await share.run(caller: "B") { await gates.run("B1") } }
        let after = Task { try await share.run(caller: "C") { await gates.run("C1") } }
        while share.load.waiting < 2 { try await Task.sleep(for: .milliseconds(5)) }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(share.load.waiting == 1)
        gates.finish("A1")
        await gates.waitStarted(2)
        gates.finish("C1")
        try await first.value
        try await after.value
        #expect(gates.order == ["A1", "C1"])
    }
}
