import Foundation
import Testing
import TestSupport

/// ``Spawned``, which runs the CLI for the end-to-end tests in place of Foundation's `Process`.
@Suite("Spawned programs", .ownThread)
struct SpawnedTests {
    @Test("output and errors are captured apart, the exit status is returned, the environment is exactly the one given")
    func outputAndStatus() throws {
        let done = try Spawned.run("/bin/sh", ["-c", "echo out; echo err >&2; echo \"$ONLY${HOME:-nohome}\"; exit 3"],
                                   environment: ["ONLY": "given-"], timeout: 30)
        #expect(done.status == 3 && !done.timedOut)
        #expect(String(decoding: done.stdout, as: UTF8.self) == "out\ngiven-nohome\n")
        #expect(String(decoding: done.stderr, as: UTF8.self) == "err\n")
    }

    @Test("more output than a pipe holds, on both streams at once, arrives whole")
    func largeOutput() throws {
        let done = try Spawned.run("/bin/sh", ["-c", "head -c 300000 /dev/zero; head -c 200000 /dev/zero >&2"], environment: [:], timeout: 30)
        #expect(done.status == 0 && done.stdout.count == 300_000 && done.stderr.count == 200_000)
    }

    @Test("a program that outlives its time is killed and said to have timed out; a signal's number is its status")
    func timeout() throws {
        let started = Date()
        let done = try Spawned.run("/bin/sleep", ["30"], environment: [:], timeout: 0.5)
        #expect(done.timedOut && done.status == SIGKILL)
        #expect(Date().timeIntervalSince(started) < 10)
    }

    @Test("the child has standard input from /dev/null and no descriptor of the test process beyond 0, 1 and 2")
    func descriptorsClosed() throws {
        // One the test process holds open without close-on-exec.
        let held = open("/dev/null", O_RDONLY)
        defer { close(held) }
        #expect(held > 2)
        let done = try Spawned.run("/bin/sh", ["-c", "ls /proc/self/fd; readlink /proc/self/fd/0"], environment: [:], timeout: 30)
        let lines = String(decoding: done.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        // ls's own listing descriptor aside (the highest number), only 0, 1 and 2.
        #expect(lines.dropLast(2) == ["0", "1", "2"], "\(lines)")
        #expect(lines.last == "/dev/null")
    }

    @Test("a program that cannot be started is an error, not a status")
    func missingProgram() {
        #expect(throws: Spawned.Failure.self) { try Spawned.run("/nonexistent/program", [], environment: [:], timeout: 5) }
    }
}
