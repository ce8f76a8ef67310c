/// Turns for the tests that start a `FolderWatcher` in the test process, directly or through an
/// in-process agent. libinotifytools keeps one global instance per process, so a second
/// `FolderWatcher` refuses to start (EBUSY) while another runs: an agent started beside
/// another test's watcher ended at once and watched nothing. Such tests take their turn here.
/// (The FolderWatch suites run in a process of their own and need none.)
public actor FolderWatcherTurn {
    public static let shared = FolderWatcherTurn()

    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Runs `body` while no other test of this process holds a turn.
    public static func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await shared.take()
        do {
            let result = try await body()
            await shared.give()
            return result
        } catch {
            await shared.give()
            throw error
        }
    }

    private func take() async {
        guard busy else { busy = true; return }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func give() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }
}
