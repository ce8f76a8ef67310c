import Foundation
import Testing
@testable import ServiceSupport

/// The D-Bus session service file: its template, and `service install` / `uninstall` writing and
/// removing the user's copy (this machine has no user manager: the unit steps fail, the file is
/// written all the same).
@Suite("BusServiceFile", .serialized)
struct BusServiceFileTests {
    static let packagingTemplate = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("packaging/dbus/io.github.quarantine.Analysis1.service.in")

    @Test("the embedded template is the packaging file")
    func embeddedTemplateIsThePackagingFile() throws {
        #expect(BusServiceFile.template == (try String(contentsOf: Self.packagingTemplate, encoding: .utf8)))
    }

    @Test("service install writes it into $XDG_DATA_HOME/dbus-1/services with the binary's agent command and the unit's name; uninstall removes it")
    func installAndUninstall() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-busfile-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        for sub in ["bin", "config", "data", "run"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        chmod(root.appendingPathComponent("run").path, 0o700)
        let binary = root.appendingPathComponent("bin/quarantine").path
        try "#!/bin/sh\nexit 0\n".write(toFile: binary, atomically: true, encoding: .utf8)
        chmod(binary, 0o755)
        let environment = ["HOME": root.path, "XDG_CONFIG_HOME": root.appendingPathComponent("config").path,
                           "XDG_DATA_HOME": root.appendingPathComponent("data").path, "XDG_RUNTIME_DIR": root.appendingPathComponent("run").path,
                           "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]
        let path = root.appendingPathComponent("data/dbus-1/services/io.github.quarantine.Analysis1.service").path
        #expect(BusServiceFile.userPath(environment: environment) == path)

        let result = try ServiceUnit.install(binary: binary, environment: environment)
        #expect(result.busServicePath == path)
        #expect(result.description.contains(path))
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        let settings = lines.filter { !$0.hasPrefix("#") }
        #expect(settings == ["[D-BUS Service]", "Name=io.github.quarantine.Analysis1",
                             "Exec=\(root.appendingPathComponent("bin").path)/quarantine agent", "SystemdService=\(ServiceUnit.unitName)"])

        let removed = try ServiceUnit.uninstall(environment: environment)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(removed.notes.contains("removed \(path)"))
        // Removed even when the unit was gone already.
        _ = try BusServiceFile.install(binaryDirectory: root.appendingPathComponent("bin").path, environment: environment)
        let again = try ServiceUnit.uninstall(environment: environment)
        #expect(!again.wasInstalled && !FileManager.default.fileExists(atPath: path))
        #expect(try !BusServiceFile.uninstall(environment: environment))
    }
}
