#if canImport(Glibc)
import Glibc
#endif

/// Where quarantine keeps its files: the XDG base directories of the account running it, its own
/// folders under them, and the system's folders of the package and the guardian service.
///
/// The one place a path is resolved from `HOME`, `XDG_DATA_HOME`, `XDG_CONFIG_HOME`,
/// `XDG_RUNTIME_DIR` or `QUARANTINE_STATE_DIR`: a relative XDG variable is ignored, as the XDG
/// specification says; so is a relative `HOME` (then the password database's home is used).
public struct Paths: Sendable {
    /// The environment the paths are resolved from.
    public var environment: [String: String]

    public init(environment: [String: String] = ProcessEnvironment.current) {
        self.environment = environment
    }

    // MARK: - The account's XDG base directories

    /// `$HOME` when it is absolute, else the password database's home of this process's user, else `/`.
    public var home: String {
        if let home = environment["HOME"], home.hasPrefix("/") { return home }
        if let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir { return String(cString: dir) }
        return "/"
    }

    /// `${XDG_DATA_HOME:-~/.local/share}`.
    public var dataHome: String { absolute("XDG_DATA_HOME") ?? home + "/.local/share" }

    /// `${XDG_CONFIG_HOME:-~/.config}`.
    public var configHome: String { absolute("XDG_CONFIG_HOME") ?? home + "/.config" }

    /// `$XDG_RUNTIME_DIR` (the account's tmpfs, `/run/user/UID`) when it is absolute and exists.
    public var runtimeDirectory: String? {
        guard let runtime = absolute("XDG_RUNTIME_DIR"), access(runtime, F_OK) == 0 else { return nil }
        return runtime
    }

    // MARK: - quarantine's own folders and files

    /// `${XDG_DATA_HOME:-~/.local/share}/quarantine`: the vault, the database, the models; or
    /// `$QUARANTINE_STATE_DIR` itself (the guardian service: `/var/lib/quarantine/USER`).
    public var state: String {
        absolute("QUARANTINE_STATE_DIR") ?? userData
    }

    /// `${XDG_DATA_HOME:-~/.local/share}/quarantine`, where `make setup` puts the runtime and models.
    public var userData: String { dataHome + "/quarantine" }

    /// The user's configuration file, `${XDG_CONFIG_HOME:-~/.config}/quarantine/config.toml`.
    public var userConfiguration: String { configHome + "/quarantine/config.toml" }

    /// The folder of the agent's lock and status file: `$XDG_RUNTIME_DIR/quarantine`, else the state folder.
    public var agentRuntime: String { runtimeDirectory.map { $0 + "/quarantine" } ?? state }

    // MARK: - The system's folders

    /// The package's configuration folder: the conffile and each protected account's `USER.toml`.
    public static let systemConfigurationFolder = "/etc/quarantine"
    /// The system-wide configuration file (the package's conffile), read under the user's.
    public static let systemConfiguration = systemConfigurationFolder + "/config.toml"
    /// The guardian service's state: one folder per protected account, and the runtime's copy.
    public static let systemState = "/var/lib/quarantine"
    /// The guardian services' sockets and the worker launcher's (`/run/quarantine`).
    public static let socketFolder = "/run/quarantine"

    private func absolute(_ name: String) -> String? {
        environment[name].flatMap { $0.hasPrefix("/") ? $0 : nil }
    }
}
