import CSystemShims
import Foundation

/// Starts a program the service does not wait for (a viewer, a terminal), with `posix_spawn`.
///
/// Foundation's `Process` needs a socket pair of a family that the user unit forbids
/// (`RestrictAddressFamilies=AF_UNIX`), and then never returns from `waitUntilExit()`; this
/// needs no socket at all. A short-lived thread reaps the child so that no zombie is left.
public enum DetachedProgram {
    /// The absolute path of `name` in the `PATH` of `environment`, if it is there; `name` itself
    /// when it is an absolute path to an executable file.
    public static func locate(_ name: String, environment: [String: String]) -> String? {
        if name.hasPrefix("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        return CommandRunner.locate(name, environment: environment)
    }

    /// The command line that starts a desktop program (a viewer, a browser) for the session:
    /// under systemd (`INVOCATION_ID` set) through `systemd-run --user` as a transient unit of
    /// its own, so that it runs outside the service's sandbox (`PrivateTmp` hides the X11
    /// socket folder, `MemoryDenyWriteExecute` kills a browser's JIT, `RestrictAddressFamilies`
    /// its network) and outlives the service; elsewhere (no systemd: no `INVOCATION_ID`, or no
    /// `systemd-run`) the program itself, which ``start(_:environment:discardingOutput:exited:)``
    /// then starts as a child of this process in a session of its own: outside a unit there is no
    /// sandbox to leave, and it outlives this process all the same. Nil when `program` (a name
    /// looked up in `PATH`, or an absolute path) is not installed. `discardingOutput`: its
    /// standard output goes nowhere also as a transient unit (not into the journal; its
    /// standard error still does).
    public static func desktopCommand(_ program: String, _ arguments: [String], environment: [String: String], discardingOutput: Bool = false) -> [String]? {
        guard let path = locate(program, environment: environment) else { return nil }
        if environment["INVOCATION_ID"] != nil, let run = locate("systemd-run", environment: environment) {
            let passed = ["DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "XDG_CURRENT_DESKTOP", "XDG_SESSION_TYPE", "LANG"]
                .compactMap { name in environment[name].map { "--setenv=\(name)=\($0)" } }
            return [run, "--user", "--collect", "--quiet", "--no-block"] + (discardingOutput ? ["--property=StandardOutput=null", "--property=StandardError=journal"] : []) + passed + ["--", path] + arguments
        }
        return [path] + arguments
    }

    /// Whether ``desktopCommand(_:_:environment:discardingOutput:)`` starts programs through
    /// `systemd-run --user` in `environment` (then the pid started is systemd-run's, which exits
    /// once the unit is queued).
    public static func startsTransientUnits(environment: [String: String]) -> Bool {
        environment["INVOCATION_ID"] != nil && locate("systemd-run", environment: environment) != nil
    }

    /// Opens `target` (a file or URL) with the desktop's handler, `xdg-open`, started as
    /// ``desktopCommand(_:_:environment:)`` says; returns why it could not, nil when it started.
    public static func openOnDesktop(_ target: String, environment: [String: String]) -> String? {
        guard let command = desktopCommand("xdg-open", [target], environment: environment) else {
            return "xdg-open is not installed (package xdg-utils)"
        }
        if case .failure(let error) = start(command, environment: environment) { return "\(error)" }
        return nil
    }

    /// Starts `arguments[0]` (an absolute path) with the rest as its arguments; returns its pid,
    /// or the errno that prevented the start. Its standard input is /dev/null, and so is its
    /// standard output with `discardingOutput`; it inherits no other descriptor above 2.
    /// `exited` gets its wait status once it is reaped (on the reaping thread).
    @discardableResult
    public static func start(_ arguments: [String], environment: [String: String], discardingOutput: Bool = false,
                             exited: (@Sendable (Int32) -> Void)? = nil) -> Result<pid_t, POSIXError> {
        guard let program = arguments.first, program.hasPrefix("/") else { return .failure(POSIXError(.ENOENT)) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own session: a signal to the service's process group never reaches it.
        // (POSIX_SPAWN_SETSID, glibc 2.26 and later; the macro does not import into Swift.)
        // With no signal blocked and every signal at its default: the program's own stop
        // (SIGTERM) works whichever thread of this process starts it (the agent blocks SIGTERM
        // from its start, and so do dispatch's threads).
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(0x80 | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if discardingOutput { posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0) }
        // Nothing of this process's but 0, 1 and 2: a descriptor without close-on-exec (one a
        // parent left open, say) would otherwise stay open for the program's whole life, and
        // whoever waits for it to close (Foundation's Process, a pipe's reader) would wait as long.
        qsys_spawn_file_actions_addclosefrom(&actions, 3)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        guard code == 0 else { return .failure(POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)) }
        let child = pid
        let reaper = Thread {
            var status: Int32 = 0
            var reaped: pid_t
            repeat { reaped = waitpid(child, &status, 0) } while reaped < 0 && errno == EINTR
            if reaped == child { exited?(status) }
        }
        reaper.name = "reap-\(child)"
        reaper.start()
        return .success(child)
    }
}
