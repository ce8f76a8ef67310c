import Dispatch
import Testing
import TestSupport

/// The ``OwnThread`` trait: a synchronous test of a suite marked `.ownThread` runs on its own
/// queue (so a wait in it holds none of Swift's shared threads); one of another suite does not.
@Suite("Tests on a thread of their own", .ownThread)
struct OwnThreadTests {
    @Test("a synchronous test body runs on the test's own queue")
    func synchronousBody() {
        #expect(DispatchQueue.getSpecific(key: OwnThreadExecutor.queueKey) == "synchronousBody()")
    }

    @Test("each case of a parameterized test too", arguments: [1, 2])
    func eachCase(number: Int) {
        #expect(DispatchQueue.getSpecific(key: OwnThreadExecutor.queueKey) != nil, "case \(number)")
    }

    @Test("an asynchronous body after a suspension is still on it")
    func asynchronousBody() async throws {
        try await Task.sleep(for: .milliseconds(10))
        #expect(DispatchQueue.getSpecific(key: OwnThreadExecutor.queueKey) != nil)
    }
}

/// The same check without the trait: on Swift's shared threads (what makes the check above able to fail).
@Suite("Tests on Swift's shared threads")
struct SharedThreadTests {
    @Test("without .ownThread a synchronous body runs on Swift's shared threads")
    func synchronousBody() {
        #expect(DispatchQueue.getSpecific(key: OwnThreadExecutor.queueKey) == nil)
    }
}
