import Foundation
import Testing
import TestSupport

/// How the end-to-end suites wait (``offPool(_:_:)``): a wait holds a thread of its own, never
/// one of Swift's shared threads, so many tests can wait at once on a 2-core machine.
@Suite("Waiting off Swift's shared threads")
struct OffPoolTests {
    @Test("with more waits under way than the machine has cores, a task on Swift's shared threads still runs at once")
    func waitsDoNotHoldTheSharedThreads() async throws {
        let (waits, took) = await Self.whileWaiting { _, started, release in await offPool { started.signal(); release.wait() } }
        #expect(took < .seconds(10), "\(waits) waits held Swift's shared threads for \(took)")
    }

    /// Starts more waits than the machine has cores, each made by `wait` (its index, a semaphore
    /// it signals once waiting, one it waits on), then runs a task that needs a shared thread and
    /// lets them go. Returns how many waits and how long it all took. Were the waits on the
    /// shared threads, nothing else would run: a watch lets them all go after 20 s, so that the
    /// test then fails instead of hanging.
    static func whileWaiting(_ wait: @escaping @Sendable (Int, DispatchSemaphore, DispatchSemaphore) async -> Void) async -> (Int, Duration) {
        let begin = ContinuousClock.now
        let waits = max(4, ProcessInfo.processInfo.activeProcessorCount * 2)
        let release = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        Thread {
            Thread.sleep(forTimeInterval: 20)
            for _ in 0..<waits { release.signal(); started.signal() }
        }.start()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<waits { group.addTask { await wait(index, started, release) } }
            // Every wait under way; then a task that needs a shared thread.
            await offPool { for _ in 0..<waits { started.wait() } }
            await Task.detached { await Task.yield() }.value
            for _ in 0..<waits { release.signal() }
        }
        return (waits, ContinuousClock.now - begin)
    }

    @Test("what the work returns or throws reaches the caller")
    func resultsAndErrors() async throws {
        #expect(await offPool { 6 * 7 } == 42)
        struct Refused: Error {}
        await #expect(throws: Refused.self) { try await offPool { () throws -> Int in throw Refused() } }
    }

    @Test("under .ownThread, synchronous waits (more than the machine has cores) hold none of Swift's shared threads")
    func ownThreadWaitsDoNotHoldTheSharedThreads() async throws {
        let (waits, took) = await Self.whileWaiting { index, started, release in
            // What OwnThread does around a test case: a synchronous body that blocks.
            await withTaskExecutorPreference(OwnThreadExecutor(name: "wait \(index)")) {
                started.signal()
                release.wait()
            }
        }
        #expect(took < .seconds(10), "\(waits) synchronous waits held Swift's shared threads for \(took)")
    }
}
