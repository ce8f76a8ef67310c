/// The guardian deployment: the system unit template that runs one guardian
/// service per protected user (`quarantine-guardian@alice.service` runs
/// `quarantine guardian serve --user alice` as the system user `quarantine`),
/// the per-instance drop-in that makes that user's home visible to it, and the
/// sysusers.d and tmpfiles.d files that create its user and folders.
///
/// The texts are byte-identical copies of the files in `packaging/` (embedded by
/// `scripts/embed-guardian-unit.sh`, kept identical by `GuardianUnitTests`), so
/// the binary can install the service without the source tree.
public enum GuardianUnit {
    /// The template's file name, as installed in /etc/systemd/system.
    public static let unitName = "quarantine-guardian@.service"

    /// The worker launcher's unit (`quarantine worker-launcher`), which every instance wants:
    /// it starts the analysis workers as the accounts' own worker users.
    public static let launcherUnitName = "quarantine-worker-launcher.service"

    /// The drop-in's file name, in `<instance>.d/` next to the unit.
    public static let homeDropInName = "home.conf"

    /// The placeholder in `homeDropInTemplate` that becomes the home.
    public static let homePlaceholder = "@HOME@"

    /// The instance of the template for `user`: `quarantine-guardian@alice.service`.
    /// The user name is escaped as `systemd-escape` does (user names are
    /// `[a-z_][a-z0-9_-]*`, so in practice only `-` changes: `a-b` gives
    /// `quarantine-guardian@a\x2db.service`); the unit uses `%I`, the unescaped
    /// instance, so the service still gets `--user a-b`.
    public static func instanceName(user: String) -> String {
        "quarantine-guardian@" + systemdEscape(user) + ".service"
    }

    /// `systemd-escape STRING` (not `--path`): `/` becomes `-`; bytes other than
    /// ASCII letters, digits, `:`, `_` and `.`, and a leading `.`, become `\xNN`.
    static func systemdEscape(_ string: String) -> String {
        var result = ""
        for (index, byte) in string.utf8.enumerated() {
            switch byte {
            case UInt8(ascii: "/"):
                result.append("-")
            case UInt8(ascii: "."):
                result += index == 0 ? hexEscape(byte) : "."
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: ":"), UInt8(ascii: "_"):
                result.append(Character(Unicode.Scalar(byte)))
            default:
                result += hexEscape(byte)
            }
        }
        return result
    }

    private static func hexEscape(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return "\\x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0f)])
    }

    /// Why `home` cannot be given to `BindPaths=` (nil when it can): systemd
    /// wants an absolute, normalized path (no `..`), at most PATH_MAX bytes with
    /// components of at most 255; a unit file line cannot hold a newline, a
    /// carriage return or NUL; and `/` is no child's home.
    public static func homeProblem(_ home: String) -> String? {
        guard home.hasPrefix("/") else { return "the home \(home.debugDescription) is not an absolute path" }
        if home.unicodeScalars.contains(where: { $0 == "\n" || $0 == "\r" || $0 == "\0" }) {
            return "the home \(home.debugDescription) has a newline, carriage return or NUL, which a unit file cannot hold"
        }
        let components = home.split(separator: "/", omittingEmptySubsequences: true)
        if components.isEmpty { return "the home is /, which is no user's home" }
        if components.contains("..") { return "the home \(home.debugDescription) has a '..' component (systemd wants a normalized path)" }
        if home.utf8.count >= 4096 { return "the home is longer than PATH_MAX" }
        if components.contains(where: { $0.utf8.count > 255 }) { return "a component of the home \(home.debugDescription) is longer than 255 bytes" }
        return nil
    }

    /// `home` written as one `BindPaths=` entry. A plain path is written as is;
    /// anything else is put in double quotes (so spaces, tabs and `:`, which
    /// separate entries, are literal), with `\` written `\\` and a `"` as `"'"'"`
    /// (close the quotes, a single-quoted `"`, reopen); `%` is written `%%`
    /// (specifiers are expanded after unquoting). That is what systemd 252's
    /// BindPaths= parser (extract_first_word with EXTRACT_UNQUOTE and
    /// EXTRACT_UNESCAPE_SEPARATORS) reads back as the path itself.
    public static func bindPathsEntry(_ home: String) -> String {
        let plain = home.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "/", ".", "_", "-", "+", "@", ",", "=", "~": return true
            default: return false
            }
        }
        if plain { return home }
        var quoted = "\""
        for character in home.unicodeScalars {
            switch character {
            case "\\": quoted += "\\\\"
            case "\"": quoted += "\"'\"'\""
            case "%": quoted += "%%"
            default: quoted.unicodeScalars.append(character)
            }
        }
        return quoted + "\""
    }

    /// The drop-in for one protected user: `homeDropInTemplate` with the
    /// placeholder replaced by `bindPathsEntry(home)`. `home` must have no
    /// `homeProblem` (a passwd home never has `:` or a newline; check the rest
    /// with `homeProblem` first): this traps otherwise, as no drop-in could say it.
    public static func homeDropIn(home: String) -> String {
        precondition(homeProblem(home) == nil, homeProblem(home) ?? "")
        return homeDropInTemplate.replacingOccurrences(of: "BindPaths=" + homePlaceholder,
                                                       with: "BindPaths=" + bindPathsEntry(home))
    }
}

// BEGIN GENERATED by scripts/embed-guardian-unit.sh from packaging/: edit those files and run the script.
extension GuardianUnit {
    /// The system unit template (install as /etc/systemd/system/quarantine-guardian@.service).
    /// Identical to packaging/systemd/quarantine-guardian@.service.
    public static let unitText = #"""
# systemd system unit template for the quarantine guardian service: one
# instance per protected (child) account, e.g. quarantine-guardian@alice.service
# runs 'quarantine guardian serve --user alice'. 'quarantine guardian enable
# --user alice' installs this file in /etc/systemd/system, writes the drop-in
# quarantine-guardian@alice.service.d/home.conf (BindPaths= the child's home,
# see quarantine-guardian-home.conf.in) and enables the instance.
# %I (the unescaped instance) is the user name everywhere: a user 'a-b' runs
# as instance 'a\x2db' (systemd-escape), and %i would be that escaped form.
# The same text is embedded in the binary as GuardianUnit.unitText
# (scripts/embed-guardian-unit.sh); a test keeps the two identical.
#
# Why the child cannot stop, mask or weaken it: this is a system unit. Stopping,
# masking, disabling or editing it, adding a drop-in, or 'systemctl edit' all
# need root (or polkit's org.freedesktop.systemd1.manage-units, which Debian
# grants to administrators only, never to a plain user); the unit, its drop-ins
# and /etc/quarantine are root-owned. The process runs as the system user
# 'quarantine', not as the child, so the child cannot signal, ptrace or read
# it; the child can see it in ps, nothing more. (So the child's account must
# not be an administrator: not in sudo, nor in quarantine-guardians.)

[Unit]
Description=quarantine guardian service for %I: keeps nude media out of the account's folders
Documentation=man:quarantine(1)
# Its analysis workers are started by the worker launcher, as the account's own
# worker user quarantine-w<uid>: this service holds no CAP_SETUID, so neither it
# nor anything that takes it over can become another user.
Wants=quarantine-worker-launcher.service
After=quarantine-worker-launcher.service

[Service]
# READY=1 once the folders are watched and the socket listens, WATCHDOG=1 every
# half of WatchdogSec, RELOADING=1 on SIGHUP, STOPPING=1 on the way out.
Type=notify
# Only the main process may talk to the notification socket: a worker (which
# parses untrusted files) cannot fake READY=1 or keep the watchdog happy.
NotifyAccess=main
ExecStart=/usr/bin/quarantine guardian serve --user %I
ExecReload=/bin/kill -HUP $MAINPID
WatchdogSec=30
Restart=on-failure
RestartSec=5
# 78 (EX_CONFIG) = /etc/quarantine/%I.toml is missing and was never read (the account was
# never enabled): restarting cannot help. A wrong or deleted file does not stop the service: it
# keeps its last good settings and 'quarantine guardian status' names the problem.
RestartPreventExitStatus=78
TimeoutStopSec=10
# mixed: SIGTERM goes to the main process alone, so it can finish the move in
# progress and stop its analysis workers in order; whatever is left after
# TimeoutStopSec is SIGKILLed, the whole cgroup.
KillMode=mixed

# A background service: it yields CPU and disk to whatever the child is doing.
Nice=10
IOSchedulingClass=idle
# Measured peak of the agent is about 260 MB (two models + one decoded video
# frame batch); the hard cap leaves a wide margin.
MemoryMax=1G
# Every thread of every process of the unit counts. Measured: 8 for
# 'quarantine scan' on 2 CPUs; the analysis pools grow by about 1.5 threads per
# CPU, so beyond ~32 CPUs lower [analysis] workers or raise this in a drop-in.
# The socket adds a fixed 5 (one thread accepts and watches idle connections,
# a pool of 4 serves requests), however many clients connect: a connection
# holds no thread, so no account can spend this limit by connecting.
# A runaway (or exploited) worker cannot fork-bomb the machine.
TasksMax=64
# Open descriptors, soft and hard (a worker cannot raise it). The socket holds
# at most 56 connections (8 of the protected account's own, and 48 shared by
# root, 16 at most, and each guardian, 8 at most); strangers are refused before
# anything of theirs is read, so what they send never reaches this table.
# While a request is served its handler may briefly hold the 16 descriptors
# one message can carry, closed at once, plus one preview: 4 x 17 = 68. With
# the listener and a wake-up pipe the socket needs at most about 130; the
# database (WAL, a few connections: ~20), inotify, the files being analysed,
# the workers' sockets and the journal stay under 200. 4096 is a wide margin
# that still bounds what a bug could leak.
LimitNOFILE=4096

# --- Identity and privileges -------------------------------------------------
# A dedicated system user (packaging/sysusers.d/quarantine.conf), not root and
# not the child: the child cannot signal, ptrace or read the service's state.
User=quarantine
Group=quarantine
# The four capabilities it really uses, given as ambient capabilities so the
# unprivileged user has them, and the bounding set is the same four, so nothing
# (not even a bug or an exploited worker) can gain any other:
#   CAP_DAC_READ_SEARCH  read the child's watched folders and files (0700 home);
#   CAP_DAC_OVERRIDE     write in folders the child owns: move a file out of
#                        the download/outgoing folder and put it back on release
#                        (and write /etc/quarantine/%I.toml, root's folder);
#   CAP_CHOWN            give a released file back to the child after a copy
#                        across file systems (the copy belongs to 'quarantine');
#   CAP_FOWNER           restore mode, times and xattrs of files it does not own.
# No CAP_SETUID or CAP_SETGID: the analysis workers, which must not run as
# 'quarantine' (the owner of every account's database, PIN hash and vault), are
# started as the account's own worker user by quarantine-worker-launcher.service,
# which holds those two alone; a guardian taken over cannot become root or any
# other user. Without the launcher's socket no worker starts (files stay held):
# never one as 'quarantine'.
AmbientCapabilities=CAP_DAC_READ_SEARCH CAP_DAC_OVERRIDE CAP_CHOWN CAP_FOWNER
CapabilityBoundingSet=CAP_DAC_READ_SEARCH CAP_DAC_OVERRIDE CAP_CHOWN CAP_FOWNER
# No setuid/setgid binary or file capability can ever raise what this service
# and its workers have (also needed for the seccomp filters below).
NoNewPrivileges=yes
# No set-user/group-ID files can be created (CAP_FOWNER could otherwise set the
# bits on a file in the child's folders).
RestrictSUIDSGID=yes
# The session keyring is the service's own, not root's or another user's.
KeyringMode=private
# New files (database, vault, previews, configuration) are private to the
# service user; the socket's 0666 is set explicitly by the service.
UMask=0077
# No System V / POSIX IPC objects survive the service (it uses none anyway).
RemoveIPC=yes

# --- File system ----------------------------------------------------------------
# The whole file system is read-only (models in /var/lib/quarantine/models and
# ONNX Runtime in /usr/lib/quarantine are read, never written) ...
ProtectSystem=strict
# ... except its own state (database, vault, previews), the socket folder, and
# the configuration folder (a guardian changes mode or folders through the
# service, which writes /etc/quarantine/%I.toml).
ReadWritePaths=/var/lib/quarantine/%I /run/quarantine /etc/quarantine
# Create /var/lib/quarantine/%I (0700, owned by quarantine) and /run/quarantine
# (0755; the sockets in it are 0666, callers checked with SO_PEERCRED) at start
# when tmpfiles.d has not yet, so the ReadWritePaths= set-up cannot fail on
# them. Preserve: /run/quarantine is shared by all instances; stopping one
# must not delete the others' sockets.
StateDirectory=quarantine/%I
StateDirectoryMode=0700
RuntimeDirectory=quarantine
RuntimeDirectoryMode=0755
RuntimeDirectoryPreserve=yes
# Every home (/home, /root, /run/user) is an empty read-only tmpfs; the drop-in
# home.conf written by 'quarantine guardian enable' adds BindPaths= the child's
# home alone, writable (the service moves files out of and back into it). Not
# 'yes' or 'read-only': the child's folders must be visible and writable.
ProtectHome=tmpfs
# Its own /tmp and /var/tmp, empty, removed when it stops: its own temporary
# files never meet another account's names there ...
PrivateTmp=yes
# ... while the host's /tmp and /var/tmp, where the child can save files too, are
# bound at side paths: the service watches them there for the child's own files
# (another account's are never touched), holds them (a copy into its state,
# flushed, then the original removed: a bind is another mount, so no rename
# reaches its holding folder) and names them /tmp/... to people. Said plainly:
# 'systemd-analyze security' does not count this bind, so its score (PrivateTmp=
# yes) does not show that the service can read and write the host's /tmp; with
# PrivateTmp=no instead it would say 1.1, not 0.9. systemd builds the namespace
# under /run/systemd/unit-root, so the sources are the host's own folders.
BindPaths=/tmp:/run/quarantine/host/tmp /var/tmp:/run/quarantine/host/var-tmp
# The child's runtime folder (/run/user/UID, its XDG_RUNTIME_DIR: its own, a
# tmpfs logind mounts at its first login and unmounts after its last session)
# is hidden by ProtectHome=tmpfs: the host's /run/user is bound at a side path,
# where the child's folder appears (and goes) as logind mounts it, and is
# watched for the child's own files while mounted. Said plainly: this makes the
# other accounts' runtime folders reachable by the service too (it touches only
# the child's files, in folders the child can write). Writable: a held file is
# copied out and removed. '-': a machine without logind has no /run/user.
BindPaths=-/run/user:/run/quarantine/host/run-user
# Removable media mounted for the child (/media/%I/..., /run/media/%I/...) are
# watched and held from too. Media mounted before the start would be read-only
# here like the rest of ProtectSystem=strict: this makes them writable ('-':
# either folder may be missing). Media mounted after the start appear in the
# service's namespace (a slave of the host's), writable, and are noticed by a
# poll of /proc/self/mountinfo (tried by hand: a tmpfs mounted on a shared host
# mount shows up read-write in an 'unshare -m --propagation slave' namespace,
# even below a folder remounted read-only there).
ReadWritePaths=-/media -/run/media
# A private /dev with the pseudo devices only (null, zero, full, random,
# urandom, tty): no disks, no input devices, no cameras.
PrivateDevices=yes
# ... and the device cgroup allows no more than those either.
DevicePolicy=closed
# Mounts made inside the service's namespace stay there (and none leak in).
PrivateMounts=yes
# /proc/sys, /sys, /proc/sysrq-trigger etc. are read-only.
ProtectKernelTunables=yes
# No kernel module loading (and /usr/lib/modules is hidden).
ProtectKernelModules=yes
# No access to the kernel log (/dev/kmsg, /proc/kmsg, syslog()).
ProtectKernelLogs=yes
# /sys/fs/cgroup is read-only.
ProtectControlGroups=yes
# The system clock cannot be set.
ProtectClock=yes
# The host name cannot be changed.
ProtectHostname=yes
# Other users' processes are invisible in /proc (it reads /proc/self only).
ProtectProc=invisible
# Only the process folders of /proc (its own: ProtectProc=invisible); no
# /proc/cpuinfo, /proc/sys or the rest. Costs, measured under a proc mounted
# with subset=pid: ONNX Runtime's cpuinfo writes "Error in cpuinfo: failed to
# parse processor information from /proc/cpuinfo" at each model load (the
# service drops that line; it takes the instruction set from CPUID: 69 photos
# scanned in 3.4 s either way), and the service cannot quote the inotify limits
# of /proc/sys/fs/inotify when it runs out of watches ('quarantine doctor' can).
ProcSubset=pid

# --- Network ---------------------------------------------------------------------
# No network at all: a private network namespace with only a loopback device.
# The Unix socket in /run/quarantine and the inherited socketpairs still work
# (AF_UNIX path sockets go through the file system, not the network namespace).
PrivateNetwork=yes
# Only AF_UNIX sockets can be created: the listening socket, the worker
# socketpairs, $NOTIFY_SOCKET and journald. No AF_INET/AF_INET6/AF_NETLINK/
# AF_PACKET; no D-Bus needed either (it sends no desktop notifications).
RestrictAddressFamilies=AF_UNIX
# And should an IP socket exist anyway, the cgroup firewall drops everything.
IPAddressDeny=any

# --- Kernel interfaces -----------------------------------------------------------
# No new namespaces of any kind (the workers sandbox themselves with seccomp
# and by dropping capabilities, not with namespaces).
RestrictNamespaces=yes
# No realtime scheduling: a bug cannot starve the child's desktop.
RestrictRealtime=yes
# personality() cannot be changed (no READ_IMPLIES_EXEC, no other ABI).
LockPersonality=yes
# No memory that is both writable and executable, and no mprotect() to make
# memory executable. The service never needs it: the Swift runtime does not
# JIT; ONNX Runtime's CPU provider (MLAS) has ahead-of-time compiled kernels
# picked at run time and no JIT; libonnxruntime.so has no text relocations and
# a non-executable stack (PT_GNU_STACK RW), so dlopen() needs no PROT_EXEC
# mprotect either. Checked under a seccomp filter emulating this one and the
# system call filter below: 'quarantine scan' (both models; JPEG, PNG, SVG,
# GIF, WebP, TIFF, an MP4) runs clean, and an analysis worker confines itself
# and loads both models.
MemoryDenyWriteExecute=yes
# Only the native system call ABI (no 32-bit x86 calls on x86_64 etc.).
SystemCallArchitectures=native
# The system calls of an ordinary service: no mount, no module, no reboot, no
# swap, no clock, no ptrace/process_vm_*, no raw I/O, no obsolete calls. It
# keeps @chown (restoring owners) and capset (workers dropping capabilities).
SystemCallFilter=@system-service
# No @resources: nothing changes a priority, a scheduling policy, a memory
# policy or a limit. Nice= and IOSchedulingClass= above already put every
# thread where the analysis threads would lower themselves (their setpriority
# and ioprio_set fail with EPERM and are ignored); the worker's RLIMIT_CORE goes
# through prlimit64, which @resources does not hold. Checked under a seccomp
# filter refusing @resources with EPERM (and a proc with subset=pid): every
# attempt of 'make attack-guardian' for holding and the worker held (20 of 20).
SystemCallFilter=~@resources
# open_by_handle_at is in @privileged, not @system-service: a held file goes
# back into the very folder it arrived in by that folder's file handle (with
# CAP_DAC_READ_SEARCH), even when the child renamed the folder meanwhile.
# Without it the service re-walks the path and checks the folder's identity.
SystemCallFilter=open_by_handle_at
# seccomp() itself is not in @system-service, and the analysis worker installs
# its own filter with it (SECCOMP_FILTER_FLAG_TSYNC, which prctl() cannot do):
# without this line the worker refuses to start ("seccomp: Operation not
# permitted", checked). It can only ever take rights away.
SystemCallFilter=seccomp
# Landlock's three calls are in no group of systemd 252 but @known: the analysis
# worker gives up all file-system access with them once its models are loaded.
# Without this line it would start without Landlock and say so in the log. They
# can only ever take rights away.
SystemCallFilter=landlock_create_ruleset landlock_add_rule landlock_restrict_self
# A refused system call fails with EPERM instead of killing the process, so the
# service reports the error and keeps watching.
SystemCallErrorNumber=EPERM

[Install]
WantedBy=multi-user.target

"""#

    /// The per-instance drop-in template; `homeDropIn(home:)` renders it.
    /// Identical to packaging/systemd/quarantine-guardian-home.conf.in.
    public static let homeDropInTemplate = #"""
# Drop-in for one instance of quarantine-guardian@.service: the child's home.
# 'quarantine guardian enable --user USER' renders this template (the HOME
# placeholder between @ signs becomes the user's home directory, escaped for a
# unit file by GuardianUnit.homeDropIn(home:)) and writes it, owned by root, to
# /etc/systemd/system/quarantine-guardian@USER.service.d/home.conf.
#
# The unit hides every home (ProtectHome=tmpfs); this makes the child's home,
# and only it, visible again at the same path, writable: the service moves
# files out of its download and outgoing folders and puts released ones back.
# Other users' homes, /root and /run/user stay hidden.

[Service]
BindPaths=@HOME@

"""#

    /// The worker launcher's system unit (install as /etc/systemd/system/quarantine-worker-launcher.service).
    /// Identical to packaging/systemd/quarantine-worker-launcher.service.
    public static let launcherUnitText = #"""
# systemd system unit for the quarantine worker launcher: the one process that
# may change its user, so that no guardian service needs to. It runs
# 'quarantine worker-launcher', which listens on /run/quarantine/launcher.sock
# (0600, user quarantine: the guardian services alone may ask; any other peer
# is refused by SO_PEERCRED before anything is read) and, for a guardian
# service protecting the account with uid N, starts an analysis worker as that
# account's own worker user quarantine-wN (all three user ids, no capability
# left) after checking that N is a protected account (/etc/quarantine/<name>.toml)
# with a worker user. It hands the guardian the worker's socket and kills the
# worker when the guardian says so or goes away (the guardian cannot signal
# another user). 'quarantine guardian enable' installs this file in
# /etc/systemd/system; every quarantine-guardian@.service instance has
# Wants= and After= it, so it starts with the first of them.
# The same text is embedded in the binary as GuardianUnit.launcherUnitText
# (scripts/embed-guardian-unit.sh); a test keeps the two identical.

[Unit]
Description=quarantine worker launcher: starts the guardian services' analysis workers as users of their own
Documentation=man:quarantine(1)

[Service]
# READY=1 once the socket listens, so the guardian services (After=) find it.
Type=notify
NotifyAccess=main
ExecStart=/usr/bin/quarantine worker-launcher
Restart=on-failure
RestartSec=2
TimeoutStopSec=10
# The workers are this unit's processes: stopping it (or its death) ends them
# all, whatever user they run as (the whole cgroup is killed).
KillMode=control-group

# The workers run in this unit's cgroup, so its limits are theirs: a worker's
# peak is about 230 MB (both models, one decoded video frame batch), and the
# launcher runs at most 24 (6 per protected account). A runaway or exploited
# worker cannot exhaust the machine's memory or fork-bomb it.
MemoryMax=4G
TasksMax=512
# Background work: the workers yield CPU and disk to whatever the child does.
Nice=10
IOSchedulingClass=idle

# --- Identity and privileges -------------------------------------------------
# The guardian services' own system user (packaging/sysusers.d/quarantine.conf):
# it reads the runtime folder in /var/lib/quarantine (0700 quarantine) to hand
# it to each worker as a descriptor, and its socket is that user's alone.
User=quarantine
Group=quarantine
# Exactly the two capabilities it uses, ambient (the unprivileged user has
# them) and bounding (nothing can ever gain another):
#   CAP_SETUID CAP_SETGID  a worker takes quarantine-w<uid> (setgroups,
#                          setresgid, setresuid, between fork and execve, then
#                          drops every capability); a kill is sent from a
#                          short-lived child that takes the worker's user.
# No file access rights beyond its user's, no CAP_KILL: it never signals
# another user's process as itself.
AmbientCapabilities=CAP_SETUID CAP_SETGID
CapabilityBoundingSet=CAP_SETUID CAP_SETGID
# No setuid/setgid binary or file capability can raise what it or a worker has.
NoNewPrivileges=yes
# No set-user/group-ID files can be created.
RestrictSUIDSGID=yes
# Its session keyring is its own.
KeyringMode=private
# Its socket is created 0600 whatever happens between bind() and chmod().
UMask=0077
# No System V / POSIX IPC objects survive it (it uses none).
RemoveIPC=yes

# --- File system ----------------------------------------------------------------
# Everything read-only ...
ProtectSystem=strict
# ... but the socket folder (launcher.sock). It reads /etc/quarantine (is an
# account protected?), /etc/passwd (users) and the runtime folder, and hands
# the workers nothing but descriptors.
ReadWritePaths=/run/quarantine
# Create /run/quarantine (0755, owned by quarantine) at start when tmpfiles.d
# has not yet; the guardian services' sockets live there too: preserved.
RuntimeDirectory=quarantine
RuntimeDirectoryMode=0755
RuntimeDirectoryPreserve=yes
# No home at all: /home, /root and /run/user are empty and inaccessible.
ProtectHome=yes
# Its own /tmp and /var/tmp, empty.
PrivateTmp=yes
# A private /dev with the pseudo devices only.
PrivateDevices=yes
# ... and the device cgroup allows no more than those either.
DevicePolicy=closed
# Mounts made inside its namespace stay there.
PrivateMounts=yes
# /proc/sys, /sys etc. read-only.
ProtectKernelTunables=yes
# No kernel module loading.
ProtectKernelModules=yes
# No kernel log.
ProtectKernelLogs=yes
# /sys/fs/cgroup read-only.
ProtectControlGroups=yes
# The clock cannot be set.
ProtectClock=yes
# The host name cannot be changed.
ProtectHostname=yes
# Other users' processes are invisible in /proc.
ProtectProc=invisible
# Only the process folders of /proc (the workers' ONNX Runtime then takes the
# instruction set from CPUID, as under the guardian unit).
ProcSubset=pid

# --- Network ---------------------------------------------------------------------
# No network: a private network namespace with only a loopback device (the
# Unix socket in /run/quarantine and the socket pairs still work).
PrivateNetwork=yes
# Only AF_UNIX sockets: the listening socket, the workers' socket pairs,
# $NOTIFY_SOCKET and journald.
RestrictAddressFamilies=AF_UNIX
# And should an IP socket exist anyway, the cgroup firewall drops everything.
IPAddressDeny=any

# --- Kernel interfaces -----------------------------------------------------------
# No new namespaces of any kind.
RestrictNamespaces=yes
# No realtime scheduling.
RestrictRealtime=yes
# personality() cannot be changed.
LockPersonality=yes
# No writable and executable memory (checked for the workers under the
# guardian unit: the Swift runtime and ONNX Runtime's CPU provider need none).
MemoryDenyWriteExecute=yes
# Only the native system call ABI.
SystemCallArchitectures=native
# The system calls of an ordinary service (it keeps @setuid for the workers'
# user change and @process for fork, execve and pidfds).
SystemCallFilter=@system-service
# No @resources: nothing changes a priority, a scheduling policy or a limit
# (Nice= and IOSchedulingClass= above already placed every thread).
SystemCallFilter=~@resources
# The analysis worker installs its own seccomp filter and seals its file system
# with Landlock: those calls are in no group of @system-service, and can only
# ever take rights away. Without them a worker refuses to start (seccomp) or
# starts without Landlock and says so.
SystemCallFilter=seccomp landlock_create_ruleset landlock_add_rule landlock_restrict_self
# A refused system call fails with EPERM instead of killing the process.
SystemCallErrorNumber=EPERM

"""#

    /// sysusers.d(5) file (install as /usr/lib/sysusers.d/quarantine.conf).
    /// Identical to packaging/sysusers.d/quarantine.conf.
    public static let sysusers = #"""
# sysusers.d(5): the users and groups of the quarantine guardian service.
# Installed as /usr/lib/sysusers.d/quarantine.conf; applied by
# 'systemd-sysusers' (at boot, or by the package's postinst).

# The system user (and its group of the same name) the guardian service runs
# as: no password, shell /usr/sbin/nologin (sysusers.d's default for a system
# user), home /var/lib/quarantine (which tmpfiles.d creates, 0700).
u quarantine - "quarantine guardian service" /var/lib/quarantine

# The user (and group) the guardian service's analysis workers run as: the
# processes that parse untrusted pictures and videos. It owns nothing, is in no
# other group, and cannot read /var/lib/quarantine (0700 quarantine): each
# worker gets its models as a descriptor and the files to judge as descriptors.
u quarantine-worker - "quarantine analysis worker"

# Members may act as guardian from their own accounts (change the mode and the
# watched folders of a protected user through the service's socket).
g quarantine-guardians -

"""#

    /// tmpfiles.d(5) file (install as /usr/lib/tmpfiles.d/quarantine.conf).
    /// Identical to packaging/tmpfiles.d/quarantine.conf.
    public static let tmpfiles = #"""
# tmpfiles.d(5): the folders of the quarantine guardian service.
# Installed as /usr/lib/tmpfiles.d/quarantine.conf; applied by
# 'systemd-tmpfiles --create' (at boot, or by the package's postinst).
# Type Path                Mode User       Group      Age

# State: one 0700 folder per protected user (database, vault, previews; the
# unit's StateDirectory= creates it), and the ONNX models in models/.
d /var/lib/quarantine      0700 quarantine quarantine -
# The per-user sockets, <user>.sock, are 0666: any local user may connect, the
# service checks who with SO_PEERCRED.
d /run/quarantine          0755 quarantine quarantine -
# The per-user configuration, <user>.toml: owned by root, readable; the service
# rewrites it when a guardian changes the mode or the folders.
d /etc/quarantine          0755 root       root       -

"""#
}
// END GENERATED
