import Dispatch
import Testing

/// Runs each test of a suite on a thread of its own instead of Swift's shared threads:
/// `@Suite(.ownThread)`.
///
/// Swift Testing runs test bodies on the cooperative pool, one thread per core (2 on the CI
/// machine). A synchronous test that waits (for `systemd-analyze`, a child process, a sleep, a
/// thread it started) holds one of those for the whole wait, and two such tests at once stop every
/// other test, async ones included, while the cores idle. Under this trait the test's task prefers
/// an executor whose jobs run on a serial dispatch queue of its own (served by the overcommitting
/// thread pool, which gives it a thread even while others block), so its waits hold no shared
/// thread. Asynchronous tests that already wait through ``offPool(_:_:)`` do not need it.
public struct OwnThread: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // Around each test case only (the suite's and the test's own scopes run no body).
        guard testCase != nil else { return try await function() }
        try await withTaskExecutorPreference(OwnThreadExecutor(name: test.name)) { try await function() }
    }
}

extension SuiteTrait where Self == OwnThread {
    /// Each test of the suite on a thread of its own (``OwnThread``).
    public static var ownThread: Self { OwnThread() }
}

extension TestTrait where Self == OwnThread {
    /// Each case of the test on a thread of its own (``OwnThread``).
    public static var ownThread: Self { OwnThread() }
}

/// A task executor whose jobs run one at a time on a serial dispatch queue of their own.
public final class OwnThreadExecutor: TaskExecutor, @unchecked Sendable {
    /// The queue the jobs run on: serial, so it targets the overcommitting root queue.
    public let queue: DispatchQueue

    /// Set on every such queue (to the test's name): `DispatchQueue.getSpecific(key:)` tells a
    /// body whether it runs on one.
    public static let queueKey = DispatchSpecificKey<String>()

    public init(name: String) {
        queue = DispatchQueue(label: "test-own-thread: \(name)")
        queue.setSpecific(key: Self.queueKey, value: name)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
