import Foundation

/// A private session bus (a real `dbus-daemon`) and, on it, a stand-in for the
/// desktop's notification server: a Python script (python3-dbus + GLib main
/// loop) that owns org.freedesktop.Notifications only inside the test, answers
/// GetCapabilities, GetServerInformation and Notify, records every Notify call
/// as a JSON line, and emits ActionInvoked right after a Notify whose summary
/// contains "[act]" (first for a notification id nobody sent, then for the id it
/// returned, with the first action's key). With the capabilities ["stuck"] it
/// owns the name and never answers anything, like a hung server.
public final class PrivateSessionBus {
    public let directory: URL
    public let address: String
    private let daemon: Process
    private var server: Process?

    public var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": address] }
    public var recordPath: String { directory.appendingPathComponent("notify-calls.jsonl").path }

    /// With `allowEveryAccount`, the bus lets every local account connect (a session bus lets
    /// in only its own account), so a service's own check of its callers can be tried.
    public init(allowEveryAccount: Bool = false) throws {
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("qdbus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("bus").path
        let config = directory.appendingPathComponent("session.conf").path
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>\(allowEveryAccount ? "\n    <allow user=\"*\"/>" : "")
          </policy>
        </busconfig>
        """.write(toFile: config, atomically: true, encoding: .utf8)
        address = "unix:path=\(socket)"
        daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        daemon.arguments = ["--config-file=\(config)", "--nofork", "--print-address"]
        daemon.standardOutput = FileHandle.nullDevice
        // Its complaints (e.g. it may not raise its fd limit here) go to a file beside the socket.
        let daemonErrors = directory.appendingPathComponent("daemon-stderr").path
        _ = FileManager.default.createFile(atPath: daemonErrors, contents: nil)
        daemon.standardError = FileHandle(forWritingAtPath: daemonErrors)
        try daemon.run()
        // The socket's file appears at bind(), before the daemon listens: a connect made in
        // between is refused (a loaded CI run saw NoServer), so wait until one is accepted.
        try Self.waitFor("dbus-daemon listening on \(socket)", seconds: 10) { Self.accepts(socket) }
        if allowEveryAccount {
            chmod(directory.path, 0o755)
            chmod(socket, 0o777)
        }
    }

    /// Starts the stand-in server with these capabilities and waits until it owns the name.
    public func startStandInServer(capabilities: [String] = ["body", "actions", "body-images"]) throws {
        let script = directory.appendingPathComponent("stand_in_notification_server.py").path
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        let ready = directory.appendingPathComponent("server-ready").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script, recordPath, ready, capabilities.joined(separator: ",")]
        process.environment = ["DBUS_SESSION_BUS_ADDRESS": address, "PATH": "/usr/bin:/bin"]
        let errors = directory.appendingPathComponent("server-stderr").path
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: errors)
        try process.run()
        server = process
        try Self.waitFor("the stand-in notification server (stderr: \(errors))", seconds: 10) {
            FileManager.default.fileExists(atPath: ready) || !process.isRunning
        }
        guard process.isRunning else {
            throw StandInError(message: "stand-in server exited: " + ((try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""))
        }
    }

    /// The Notify calls the stand-in received, as decoded JSON objects.
    public func recordedCalls() throws -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: recordPath, encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
    }

    /// The ids of the notifications asked to close (CloseNotification), in order.
    public func closedNotifications() -> [Int] {
        guard let text = try? String(contentsOfFile: recordPath + ".closed", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["id"] as? Int
        }
    }

    /// Presses button `key` on notification `id`, as a person would: the stand-in server emits
    /// ActionInvoked (a test-only method of the stand-in, called with dbus-send).
    public func pressButton(_ key: String, onNotification id: Int) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-send")
        process.arguments = ["--session", "--print-reply", "--dest=org.freedesktop.Notifications", "/org/freedesktop/Notifications",
                             "org.quarantine.Test.PressButton", "uint32:\(id)", "string:\(key)"]
        process.environment = ["DBUS_SESSION_BUS_ADDRESS": address]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw StandInError(message: "dbus-send PressButton failed (\(process.terminationStatus))") }
    }

    public func stop() {
        // SIGKILL: a child of a Swift test process can inherit a signal mask
        // that blocks SIGTERM (dispatch's worker threads block it).
        for process in [server, daemon].compactMap({ $0 }) where process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        server = nil
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }

    struct StandInError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// Whether a stream connection to the Unix socket at `path` is accepted now.
    static func accepts(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
        }
    }

    public static func waitFor(_ what: String, seconds: Double = 5, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            if Date() > deadline { throw StandInError(message: "timed out waiting for \(what)") }
            usleep(10_000)
        }
    }

    static let script = #"""
    # StandInNotificationServer: stands in for the desktop's notification server
    # (org.freedesktop.Notifications) on a private test bus, and nowhere else.
    import json, sys
    import dbus, dbus.service, dbus.mainloop.glib
    from gi.repository import GLib

    record_path, ready_path, capabilities = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    IFACE = "org.freedesktop.Notifications"

    def plain(value):
        if isinstance(value, (dbus.Byte, dbus.Int32, dbus.UInt32, dbus.Int64, dbus.UInt64, dbus.Int16, dbus.UInt16)):
            return int(value)
        if isinstance(value, dbus.Boolean):
            return bool(value)
        if isinstance(value, (dbus.Array, list)):
            return [plain(v) for v in value]
        return str(value)

    class StandInNotificationServer(dbus.service.Object):
        def __init__(self, bus):
            super().__init__(bus, "/org/freedesktop/Notifications")
            self.last_id = 0

        @dbus.service.method(IFACE, in_signature="", out_signature="as")
        def GetCapabilities(self):
            return capabilities

        @dbus.service.method(IFACE, in_signature="", out_signature="ssss")
        def GetServerInformation(self):
            return ("StandInNotificationServer", "quarantine tests", "1.0", "1.2")

        @dbus.service.method(IFACE, in_signature="susssasa{sv}i", out_signature="u")
        def Notify(self, app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout):
            self.last_id += 1
            nid = int(replaces_id) or self.last_id
            call = {
                "id": nid, "app_name": str(app_name), "replaces_id": int(replaces_id), "app_icon": str(app_icon),
                "summary": str(summary), "body": str(body), "actions": [str(a) for a in actions],
                "hints": {str(k): plain(v) for k, v in hints.items()},
                "hint_types": {str(k): type(v).__name__ for k, v in hints.items()},
                "expire_timeout": int(expire_timeout),
            }
            with open(record_path, "a") as f:
                f.write(json.dumps(call) + "\n")
            if "[act]" in str(summary):
                key = str(actions[0]) if len(actions) else "default"
                def invoke():
                    self.ActionInvoked(dbus.UInt32(nid + 1000), "not-ours")
                    self.ActionInvoked(dbus.UInt32(nid), key)
                    return False
                GLib.idle_add(invoke)
            return dbus.UInt32(nid)

        @dbus.service.method(IFACE, in_signature="u", out_signature="")
        def CloseNotification(self, nid):
            with open(record_path + ".closed", "a") as f:
                f.write(json.dumps({"id": int(nid)}) + "\n")
            self.NotificationClosed(nid, dbus.UInt32(3))

        # Test only: a person pressing button `key` of notification `nid`.
        @dbus.service.method("org.quarantine.Test", in_signature="us", out_signature="")
        def PressButton(self, nid, key):
            self.ActionInvoked(nid, key)

        @dbus.service.signal(IFACE, signature="us")
        def ActionInvoked(self, nid, key):
            pass

        @dbus.service.signal(IFACE, signature="uu")
        def NotificationClosed(self, nid, reason):
            pass

    if capabilities == ["stuck"]:
        # Owns the name and never answers: a hung desktop server.
        import time
        bus = dbus.SessionBus()
        name = dbus.service.BusName(IFACE, bus, do_not_queue=True)
        open(ready_path, "w").close()
        time.sleep(600)
        sys.exit(0)

    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    server = StandInNotificationServer(bus)
    name = dbus.service.BusName(IFACE, bus, do_not_queue=True)
    open(ready_path, "w").close()
    GLib.MainLoop().run()
    """#
}
