import Foundation
import FolderWatch
import Testing
import TestSupport
@testable import AccountPipeline

/// The watch roots are computed and given to the watcher in one turn (``AccountPipeline/rootsTurn``)
/// at start, at a reload and at a mount change (issue 26): two of these racing must never leave
/// the watcher with an older list than the last one computed (a folder left unwatched).
@Suite("Agent roots turn", .serialized)
struct AgentRootsTurnTests {
    /// The files this process's inotify descriptors watch (`/proc/self/fdinfo`, read whole, each
    /// as device and inode: other suites' watchers in this process watch other file systems):
    /// what the kernel was really asked to watch, whatever the agent believes.
    static func watchedInodes() -> Set<WatchedInode> { WatchedInode.watched() }

    static func inode(_ path: String) -> WatchedInode? { WatchedInode(path: path) }

    static func configuration(incoming: String) -> String {
        """
        mode = "child"
        [watch]
        incoming = ["\(incoming)"]
        outgoing = []
        [agent]
        notifications = false
        settle_ms = 100

        """
    }

    @Test("reloads and mount changes fired together, 60 times while the configured folder and the mounted medium change: the watcher ends each time on the last list computed")
    func reloadsAndMountsRace() async throws {
        let rounds = 60
        let home = try AgentInProcessTests.Home(configuration: Self.configuration(incoming: "/nonexistent-before")); defer { home.cleanUp() }
        let protected = home.folder.appendingPathComponent("protected").path
        let media = home.folder.appendingPathComponent("media").path
        let configured = home.folder.appendingPathComponent("configured").path
        for round in 0...rounds {
            try FileManager.default.createDirectory(atPath: "\(configured)/c\(round)", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: "\(media)/m\(round)", withIntermediateDirectories: true)
        }
        try FileManager.default.createDirectory(atPath: protected, withIntermediateDirectories: true)
        let configFile = home.folder.appendingPathComponent("config/quarantine/config.toml")
        try Data(Self.configuration(incoming: "\(configured)/c0").utf8).write(to: configFile, options: .atomic)
        let engine = AgentInProcessTests.StandInEngine()
        try await AgentInProcessTests.withAgent(home, engine: engine, configure: { options in
            options.protectedHome = protected
            options.sharedFolders = []
            options.removableMediaFolders = [media]
            // The window between computing a list and applying it, widened: without the turn, a
            // list computed first and applied last is then all but certain within a few rounds.
            options.rootsComputed = { _ in usleep(UInt32.random(in: 0...3000)) }
        }) { agent in
            let candidates = (0...rounds).flatMap { ["\(configured)/c\($0)", "\(media)/m\($0)"] }
            for round in 1...rounds {
                try Data(Self.configuration(incoming: "\(configured)/c\(round)").utf8).write(to: configFile, options: .atomic)
                let table = MountTable(mountPoints: ["/", "\(media)/m\(round)"])
                // A SIGHUP's reload and a mount change, at once, from two threads.
                async let reloaded: Void = agent.pipeline.reload(.hangup)
                async let mounted: Void = offPool("mount-change") { agent.pipeline.mountsChanged(table) }
                _ = await (reloaded, mounted)
                // What should be watched now: the last configuration and the last mount table
                // (the machine's own, should its mounts change meanwhile: the agent's mount
                // watcher follows the real table too, one more racer).
                // The list is computed again at each look: a real mount elsewhere on the machine
                // (another test's) sends the agent the real table meanwhile, which is then the last.
                @Sendable func expected() -> Set<String> { Set(agent.pipeline.currentRoots(agent.pipeline.state.withLock { $0.settings }).map(\.path)) }
                #expect(expected().contains("\(configured)/c\(round)"), "round \(round): \(expected().sorted())")
                let settled = await AgentInProcessTests.waitUntil(10) {
                    let expected = expected()
                    let wanted = Set(expected.compactMap(Self.inode))
                    let unwanted = Set(candidates.filter { !expected.contains($0) }.compactMap(Self.inode))
                    let watched = Self.watchedInodes()
                    return wanted.isSubset(of: watched) && watched.isDisjoint(with: unwanted)
                }
                if !settled {
                    let expected = expected()
                    let watched = Self.watchedInodes()
                    let stale = candidates.filter { Self.inode($0).map(watched.contains) == true && !expected.contains($0) }
                    let missing = expected.filter { Self.inode($0).map(watched.contains) == false }
                    Issue.record("round \(round): the watcher has an older list than the last computed: watched but no longer wanted \(stale), wanted but not watched \(missing.sorted())")
                    return
                }
            }
        }
    }
}
