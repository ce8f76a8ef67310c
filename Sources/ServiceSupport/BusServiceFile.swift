#if canImport(Glibc)
import Glibc
#endif
import Foundation
import QuarantineBase

/// The D-Bus session service file of the agent's analysis service: with it in a folder the
/// session bus reads (`$XDG_DATA_HOME/dbus-1/services/`, `/usr/share/dbus-1/services/`), the bus
/// starts the agent when an application asks for `io.github.quarantine.Analysis1` and none runs:
/// through the user unit (`SystemdService=`) where systemd manages the session, else by running
/// `Exec=` itself. `quarantine service install` writes it beside the unit; `uninstall` removes it.
public enum BusServiceFile {
    /// The file's name: the bus name and `.service`.
    public static let fileName = "io.github.quarantine.Analysis1.service"

    /// The template, identical to packaging/dbus/io.github.quarantine.Analysis1.service.in (a
    /// test keeps them so); `@BINDIR@` becomes the binary's directory.
    public static let template = #"""
# D-Bus session service file: the bus starts the quarantine agent when an application asks
# for io.github.quarantine.Analysis1 and no agent runs yet. With a systemd user session the
# bus asks systemd to start the user unit (SystemdService=), so the agent runs sandboxed as
# 'systemctl --user start quarantine' would; without one it runs Exec= itself.
# The BINDIR placeholder (between @ signs) becomes the directory of the quarantine binary
# (packaging/build-deb.sh, packaging/install.sh).
[D-BUS Service]
Name=io.github.quarantine.Analysis1
Exec=@BINDIR@/quarantine agent
SystemdService=quarantine.service

"""#

    /// Where the user's own copy goes: `${XDG_DATA_HOME:-$HOME/.local/share}/dbus-1/services/`.
    public static func userPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        Paths(environment: environment).dataHome + "/dbus-1/services/" + fileName
    }

    /// The file for the binary in `binaryDirectory`.
    public static func render(binaryDirectory: String) -> String {
        var directory = binaryDirectory
        while directory.count > 1, directory.hasSuffix("/") { directory.removeLast() }
        return template.replacingOccurrences(of: ServiceUnit.binaryDirectoryPlaceholder, with: directory)
    }

    /// Writes the file for the binary in `binaryDirectory` (atomically); its path.
    @discardableResult
    public static func install(binaryDirectory: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String {
        let path = userPath(environment: environment)
        try ServiceUnit.writeAtomically(render(binaryDirectory: binaryDirectory), to: path, operation: "write the D-Bus service file")
        return path
    }

    /// Removes the user's copy; false when there was none.
    @discardableResult
    public static func uninstall(environment: [String: String] = ProcessInfo.processInfo.environment) throws(ServiceError) -> Bool {
        let path = userPath(environment: environment)
        if unlink(path) == 0 { return true }
        guard errno == ENOENT else {
            throw ServiceError(code: .fileSystem, operation: "remove the D-Bus service file", message: "cannot remove \(path); remove it by hand",
                               cause: String(cString: strerror(errno)))
        }
        return false
    }
}
