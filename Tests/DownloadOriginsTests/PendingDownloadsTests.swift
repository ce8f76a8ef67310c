import Foundation
import Testing
@testable import DownloadOrigins

/// Whether a browser may still write a download's history (Chromium commits about every 10 s).
@Suite("Pending downloads")
struct PendingDownloadsTests {
    @Test("only while a Chromium-family browser runs (its SingletonLock names a live process) and only for a file written in the last seconds")
    func mayStillRecord() throws {
        let place = try FakeHome()
        defer { place.cleanUp() }
        _ = try place.chromiumProfile()
        let written = Date()
        let history = place.history()
        #expect(!history.mayStillRecord(writtenAt: written), "no browser runs")
        let lock = place.config + "/chromium/SingletonLock"
        #expect(symlink("testhost-\(getpid())", lock) == 0)
        #expect(history.mayStillRecord(writtenAt: written))
        #expect(!history.mayStillRecord(writtenAt: written, now: written.addingTimeInterval(12)), "written too long ago")
        unlink(lock)
        // A lock left by a browser that crashed (its process is gone).
        var dead: pid_t = 0
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        dead = child.processIdentifier
        #expect(symlink("testhost-\(dead)", lock) == 0)
        #expect(!history.mayStillRecord(writtenAt: written))
    }
}
