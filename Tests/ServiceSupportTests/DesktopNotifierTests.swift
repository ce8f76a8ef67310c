import Foundation
import TestSupport
import Testing
@testable import ServiceSupport

/// DesktopNotifier with real libdbus against a real dbus-daemon and the
/// StandInNotificationServer (see StandInNotificationServer.swift).
@Suite("DesktopNotifier")
struct DesktopNotifierTests {
    /// The first element of `stream`, or nil when none comes within `seconds`.
    static func first<T: Sendable>(of stream: AsyncStream<T>, within seconds: Double) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask {
                for await element in stream { return element }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return nil
            }
            let result = await group.next() ?? nil
            group.cancelAll()
            return result
        }
    }

    /// True when `stream` ends within `seconds`.
    static func finishes<T: Sendable>(_ stream: AsyncStream<T>, within seconds: Double) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in stream {}
                return true
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return false
            }
            let result = await group.next() ?? false
            group.cancelAll()
            return result
        }
    }

    @Test func sendsSummaryBodyImageActionsAndUrgency() throws {
        let bus = try PrivateSessionBus()
        defer { bus.stop() }
        try bus.startStandInServer()
        let notifier = try #require(DesktopNotifier.connect(environment: bus.environment))
        defer { notifier.close() }
        #expect(notifier.capabilities == ["body", "actions", "body-images"])
        #expect(notifier.serverName == "StandInNotificationServer")
        #expect(notifier.serverInformation.specificationVersion == "1.2")

        let preview = "/tmp/quarantine vault/previews/a b.jpg"
        let id = try notifier.send(DesktopNotification(
            summary: "Moved “holiday.mp4” to the vault", body: "Found in ~/Downloads",
            imagePath: preview, urgency: .critical,
            actions: [.init(key: "review", label: "Review"), .init(key: "release", label: "Put back")],
            timeoutMilliseconds: 8000))
        let calls = try bus.recordedCalls()
        #expect(calls.count == 1)
        let call = try #require(calls.first)
        #expect(call["id"] as? Int == Int(id))
        #expect(call["app_name"] as? String == "quarantine")
        #expect(call["replaces_id"] as? Int == 0)
        #expect(call["summary"] as? String == "Moved “holiday.mp4” to the vault")
        #expect(call["body"] as? String == "Found in ~/Downloads")
        #expect(call["actions"] as? [String] == ["review", "Review", "release", "Put back"])
        #expect(call["expire_timeout"] as? Int == 8000)
        let hints = try #require(call["hints"] as? [String: Any])
        let types = try #require(call["hint_types"] as? [String: String])
        #expect(hints["image-path"] as? String == "file:///tmp/quarantine%20vault/previews/a%20b.jpg")
        #expect(hints["image_path"] as? String == "file:///tmp/quarantine%20vault/previews/a%20b.jpg")
        #expect(URL(string: hints["image-path"] as? String ?? "")?.path == preview)
        #expect(hints["urgency"] as? Int == 2)
        #expect(types["urgency"] == "Byte")
        #expect(hints["desktop-entry"] as? String == "quarantine")

        // Replacing keeps the id; no image means no image hints.
        let again = try notifier.send(DesktopNotification(summary: "Moved 2 files", urgency: .low), replacing: id)
        #expect(again == id)
        let second = try #require(try bus.recordedCalls().last)
        #expect(second["replaces_id"] as? Int == Int(id))
        let secondHints = try #require(second["hints"] as? [String: Any])
        #expect(secondHints["image-path"] == nil)
        #expect(secondHints["urgency"] as? Int == 0)
    }

    @Test func actionInvokedArrivesOnTheStream() async throws {
        let bus = try PrivateSessionBus()
        defer { bus.stop() }
        try bus.startStandInServer()
        let notifier = try #require(DesktopNotifier.connect(environment: bus.environment))
        defer { notifier.close() }
        let id = try notifier.send(DesktopNotification(summary: "[act] Moved 1 file",
                                                       actions: [.init(key: "review", label: "Review")]))
        // The stand-in first invokes an action on an id we never sent: filtered out.
        let invoked = await Self.first(of: notifier.actionInvoked, within: 5)
        #expect(invoked?.id == id)
        #expect(invoked?.key == "review")
    }

    @Test func noActionsWithoutTheActionsCapability() throws {
        let bus = try PrivateSessionBus()
        defer { bus.stop() }
        try bus.startStandInServer(capabilities: ["body"])
        let notifier = try #require(DesktopNotifier.connect(environment: bus.environment))
        defer { notifier.close() }
        #expect(!notifier.capabilities.contains("actions"))
        try notifier.send(DesktopNotification(summary: "Moved 1 file", actions: [.init(key: "review", label: "Review")]))
        let call = try #require(try bus.recordedCalls().first)
        #expect(call["actions"] as? [String] == [])
    }

    @Test func noBusMeansNilAtOnce() throws {
        let start = ContinuousClock.now
        #expect(DesktopNotifier.connect(environment: [:]) == nil)
        #expect(DesktopNotifier.connect(environment: ["DBUS_SESSION_BUS_ADDRESS": ""]) == nil)
        #expect(DesktopNotifier.connect(environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/quarantine-bus"]) == nil)
        #expect(DesktopNotifier.connect(environment: ["DBUS_SESSION_BUS_ADDRESS": "autolaunch:"]) == nil)
        #expect(ContinuousClock.now - start < .milliseconds(500))

        let error = #expect(throws: ServiceError.self) {
            try DesktopNotifier.connectOrThrow(environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/quarantine-bus"])
        }
        #expect(error?.code == .dbusConnectionFailed)
        #expect(error?.dbusErrorName != nil)
    }

    @Test func busWithoutServerMeansNilWithinASecond() throws {
        let bus = try PrivateSessionBus()
        defer { bus.stop() }
        let start = ContinuousClock.now
        #expect(DesktopNotifier.connect(environment: bus.environment) == nil)
        #expect(ContinuousClock.now - start < .milliseconds(1500))

        let error = #expect(throws: ServiceError.self) { try DesktopNotifier.connectOrThrow(environment: bus.environment) }
        #expect(error?.operation == "GetCapabilities")
        #expect(error?.dbusErrorName == "org.freedesktop.DBus.Error.ServiceUnknown")
        #expect(error?.description.contains("org.freedesktop.Notifications") == true)
    }

    @Test func hungServerMeansNilWithinASecond() throws {
        let bus = try PrivateSessionBus()
        defer { bus.stop() }
        try bus.startStandInServer(capabilities: ["stuck"])
        let start = ContinuousClock.now
        #expect(DesktopNotifier.connect(environment: bus.environment) == nil)
        #expect(ContinuousClock.now - start < .milliseconds(1500))

        let error = #expect(throws: ServiceError.self) {
            try DesktopNotifier.connectOrThrow(environment: bus.environment, timeout: .milliseconds(300))
        }
        #expect(error?.dbusErrorName == "org.freedesktop.DBus.Error.NoReply")
    }

    @Test func markupEscaping() {
        #expect(DesktopNotification.escapeMarkup("<b>Tom & Jerry</b>.jpg") == "&lt;b&gt;Tom &amp; Jerry&lt;/b&gt;.jpg")
    }

    @Test func closeEndsTheStreamAndLaterSendsFail() async throws {
        let bus = try PrivateSessionBus()
        defer { bus.stop() }
        try bus.startStandInServer()
        let notifier = try #require(DesktopNotifier.connect(environment: bus.environment))
        let id = try notifier.send(DesktopNotification(summary: "Moved 1 file"))
        try notifier.withdraw(id)

        // The reader thread sleeps in poll(2): no CPU while nothing happens. (It names itself once
        // it runs, which under load can be after connect() has returned.)
        try PrivateSessionBus.waitFor("the reader thread to start") { Self.readerThreadCPUTicks() != nil }
        let before = try #require(Self.readerThreadCPUTicks())
        try await Task.sleep(for: .milliseconds(500))
        let after = try #require(Self.readerThreadCPUTicks())
        #expect(after - before <= 1)

        let start = ContinuousClock.now
        notifier.close()
        notifier.close()
        #expect(ContinuousClock.now - start < .seconds(1))
        #expect(await Self.finishes(notifier.actionInvoked, within: 5))
        try PrivateSessionBus.waitFor("the reader thread to exit") { Self.readerThreadCPUTicks() == nil }
        let error = #expect(throws: ServiceError.self) { try notifier.send(DesktopNotification(summary: "late")) }
        #expect(error?.code == .closed)
    }

    @Test func serverGoingAwayEndsTheStream() async throws {
        let bus = try PrivateSessionBus()
        try bus.startStandInServer()
        let notifier = try #require(DesktopNotifier.connect(environment: bus.environment))
        defer { notifier.close() }
        bus.stop()   // the daemon exits: the connection is dropped
        #expect(await Self.finishes(notifier.actionInvoked, within: 5))
        #expect(throws: ServiceError.self) { try notifier.send(DesktopNotification(summary: "after")) }
    }

    /// utime + stime of this process's D-Bus reader thread(s), from /proc; nil when none runs.
    static func readerThreadCPUTicks() -> Int? {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return nil }
        var total: Int?
        for task in tasks {
            guard let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                  comm.trimmingCharacters(in: .whitespacesAndNewlines) == BusConnection.readerThreadName,
                  let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // After "pid (comm)": state is field 0, utime is 11, stime is 12.
            total = (total ?? 0) + (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
        }
        return total
    }
}
