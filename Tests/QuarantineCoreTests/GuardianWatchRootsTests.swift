import Foundation
import Testing
@testable import QuarantineAgent
@testable import QuarantineCore

/// What the guardian service watches in a protected account (issue 26: only Downloads was).
@Suite("Guardian watch roots")
struct GuardianWatchRootsTests {
    @Test("child mode: the whole home first, then the configured folders; adult mode or a person's own agent: the configured folders only")
    func protectedHomeIsWatchedWhole() throws {
        let home = "/home/sam"
        var settings = try Settings().applying(toml: "mode = \"child\"\n[watch]\nincoming = [\"/home/sam/Downloads\"]\noutgoing = [\"/home/sam/Shared\"]\n", from: "sam.toml")
        let environment = ["HOME": home]
        let roots = QuarantineAgent.watchRoots(settings, environment: environment, protectedHome: home)
        #expect(roots.map(\.path) == [home, "/home/sam/Downloads", "/home/sam/Shared", "/dev/shm"])
        #expect(roots.map(\.direction) == [.incoming, .incoming, .outgoing, .incoming])
        #expect(QuarantineAgent.watchRoots(settings, environment: environment).map(\.path) == ["/home/sam/Downloads", "/home/sam/Shared"])
        settings.mode = .adult
        #expect(QuarantineAgent.watchRoots(settings, environment: environment, protectedHome: home).map(\.path) == ["/home/sam/Downloads"])
    }

    @Test("what is not watched is said, with its reason; browser caches are named by path under the home, never by a name")
    func unwatchedIsSaid() {
        let lines = QuarantineAgent.unwatched(home: "/home/sam", mode: .child)
        #expect(lines.contains { $0.hasPrefix("/home/sam/.cache/chromium") && $0.contains("cache") })
        #expect(lines.contains { $0.contains("/tmp") } && !lines.contains { $0.contains("/dev/shm") })
        // Private mounts are said by `guardian status` itself: the service's unit hides /proc/sys.
        #expect(!lines.contains { $0.hasPrefix("private mounts") })
        #expect(QuarantineAgent.protectedHomeExclusions.allSatisfy { $0.path.contains("/") }, "a path, not a bare name")
    }
}
