#compdef quarantine

__quarantine_complete() {
    local -ar non_empty_completions=("${@:#(|:*)}")
    local -ar empty_completions=("${(M)@:#(|:*)}")
    _describe -V '' non_empty_completions -- empty_completions -P $'\'\''
}

__quarantine_custom_complete() {
    local -a completions
    completions=("${(@f)"$("${command_name}" "${@}" "${command_line[@]}")"}")
    if [[ "${#completions[@]}" -gt 1 ]]; then
        __quarantine_complete "${completions[@]:0:-1}"
    fi
}

__quarantine_cursor_index_in_current_word() {
    if [[ -z "${QIPREFIX}${IPREFIX}${PREFIX}" ]]; then
        printf 0
    else
        printf %s "${#${(z)LBUFFER}[-1]}"
    fi
}

_quarantine() {
    emulate -RL zsh -G
    setopt extendedglob nullglob numericglobsort
    unsetopt aliases banghist

    local -xr SAP_SHELL=zsh
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(builtin emulate zsh -c 'printf %s "${ZSH_VERSION}"')"
    local -r SAP_SHELL_VERSION

    local context state state_descr line
    local -A opt_args

    local -r command_name="${words[1]}"
    local -ar command_line=("${words[@]}")
    local -ir current_word_index="$((CURRENT - 1))"

    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'agent:Watch the folders where media arrives and hide what is sensitive (what the user service runs).'
            'status:Is the agent running; what it watches, what waits and what it is checking now.'
            'watch:Add, remove or list the folders the agent watches.'
            'scan:Check files and folders for nudity (read-only unless --quarantine).'
            'stream:Analyse a live video (a V4L2 camera, a pipe, a file played at its own rate) and print each change of advice.'
            'session-forwarder:Answer applications on the session bus of an account a guardian service protects.'
            'list:List what is in the vault, newest first.'
            'show:Show one item: where it came from, why it was hidden, and its blurred preview.'
            'release:Put a file back where it was (or --to DIR), exactly as it was. Nothing is overwritten.'
            'block:Delete a quarantined file (or keep it sealed) and block its contents from coming back.'
            'history:Show the audit log: every quarantine, release, block and error, newest first.'
            'purge:Delete vault items older than a number of days: lists them, asks, and records each one.'
            'count:Say how many items the vault holds, how many were asked back, and how many it held before, by state.'
            'guardian:The guardian: the PIN child mode asks for, and the system service that protects a child'\''s account.'
            'mode:Show or change the mode: adult or child. Entering child mode needs a guardian PIN set; leaving it needs that PIN.'
            'config:Show or check the configuration; print its schema.'
            'service:Install, remove or inspect the systemd user service that runs the agent.'
            'testcard:Write the synthetic test card: a harmless picture always reported as sensitive (TEST_CARD).'
            'doctor:Check the installation: runtime, models (sha256), decoders, inotify limits, file locations.'
            'review:Review hidden items in the browser: a local page for this session.'
            'help:Show subcommand help information.'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        agent|status|watch|scan|stream|session-forwarder|list|show|release|block|history|purge|count|guardian|mode|config|service|testcard|doctor|review|help)
            "_quarantine_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_quarantine_agent() {
    local -i ret=1
    local -ar arg_specs=(
        '--config[Configuration file (default\: ~/.config/quarantine/config.toml).]:file:'
        '--workers[Files analysed at once (default\: the configuration'\''s, one per core).]:n:'
        '--log-level[Least important log level shown\: debug, info, notice, warning, error.]:level:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_status() {
    local -i ret=1
    local -ar arg_specs=(
        '--json[Print JSON.]'
        '--user[The protected account to act on (a guardian\: root or a member of quarantine-guardians).]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_watch() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'list:List the watched folders.'
            'add:Watch another folder.'
            'remove:Stop watching a folder (nothing in it is touched).'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        list|add|remove)
            "_quarantine_watch_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_quarantine_watch_list() {
    local -i ret=1
    local -ar arg_specs=(
        '--json[Print JSON.]'
        '--user[The protected account to act on (a guardian\: root or a member of quarantine-guardians).]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_watch_add() {
    local -i ret=1
    local -ar arg_specs=(
        '--outgoing[A shared or synced folder\: check what is put there before it leaves (child mode only).]'
        ':path:'
        '--user[The protected account to act on (a guardian\: root or a member of quarantine-guardians).]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_watch_remove() {
    local -i ret=1
    local -ar arg_specs=(
        ':path:'
        '--user[The protected account to act on (a guardian\: root or a member of quarantine-guardians).]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_scan() {
    local -i ret=1
    local -ar ___mode=('adult' 'child')
    local -ar arg_specs=(
        '--json[Print one JSON object per file (JSON Lines) instead of text.]'
        '(-v --verbose)'{-v,--verbose}'[Also list files that are not flagged.]'
        '--all[Videos\: list every flagged time range instead of stopping at the first flagged frame.]'
        '--quarantine[Move what is flagged into the vault (see '\''quarantine list'\''); like clamscan --move, but restorable.]'
        '--mode[Policy to judge by\: adult or child (default\: the config file'\''s mode).]:mode:{__quarantine_complete "${___mode[@]}"}'
        '--config[Configuration file (default\: ~/.config/quarantine/config.toml).]:file:'
        '--workers[Files analysed at once (default\: one per core).]:n:'
        '*:path:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_stream() {
    local -i ret=1
    local -ar ___mode=('adult' 'child')
    local -ar arg_specs=(
        '--json[Print one JSON object per line (each change, then a summary) instead of text.]'
        '--mode[Policy to judge by\: adult or child (default\: the config file'\''s mode).]:mode:{__quarantine_complete "${___mode[@]}"}'
        '--config[Configuration file (default\: ~/.config/quarantine/config.toml).]:file:'
        '--judges[Frames judged at once, each on its own thread (default 1).]:n:'
        '--max-rate[At most this many judgements a second, the newest frame each time (default 8; 0\: as fast as the judges go).]:n:'
        '--no-pacing[Decode a file as fast as possible instead of at its own rate (frames the judges cannot keep up with are dropped).]'
        '--blur-to[Write every frame, blurred while flagged, to a v4l2loopback device (/dev/videoM), a file or '\''-'\'' (YUV4MPEG; .nut\: NUT).]:target:'
        ':input:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_session-forwarder() {
    local -i ret=1
    local -ar arg_specs=(
        '--log-level[Least important log level shown\: debug, info, notice, warning, error.]:level:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_list() {
    local -i ret=1
    local -ar arg_specs=(
        '--json[Print one JSON object per item (JSON Lines).]'
        '--all[Also list released, blocked and purged items.]'
        '--user[The protected account to act on (a guardian\: root or a member of quarantine-guardians).]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_show() {
    local -i ret=1
    local -ar arg_specs=(
        ':id:'
        '--open[Open the blurred preview (never the original) with xdg-open.]'
        '--json[Print one JSON object.]'
        '--user[The protected account to act on (a guardian\: root or a member of quarantine-guardians).]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_release() {
    local -i ret=1
    local -ar arg_specs=(
        ':id:'
        '--to[Restore into this folder instead of the original one.]:dir:'
        '(-y --yes)'{-y,--yes}'[Do not ask for confirmation.]'
        '--ask[Child mode\: ask the guardian to release it, without the PIN. The request is recorded and shown in '\''quarantine list'\''; nothing is released. (Pressing Enter at the PIN prompt does the same.)]'
        '--user[The protected account to act on (a guardian\: root or a member of quarantine-guardians).]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_block() {
    local -i ret=1
    local -ar arg_specs=(
        ':id:'
        '--keep[Keep the file sealed in the vault instead of deleting it.]'
        '--origin[Also block the site in its origin URL.]'
        '(-y --yes)'{-y,--yes}'[Do not ask for confirmation.]'
        '--user[The protected account to act on (a guardian\: root or a member of quarantine-guardians).]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_history() {
    local -i ret=1
    local -ar arg_specs=(
        '--json[Print one JSON object per event (JSON Lines).]'
        '--user[The protected account to act on (a guardian\: root or a member of quarantine-guardians).]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_purge() {
    local -i ret=1
    local -ar arg_specs=(
        '--older-than[Only items hidden more than this many days ago.]:days:'
        '(-y --yes)'{-y,--yes}'[Do not ask for confirmation.]'
        '--user[The protected account to act on (a guardian\: root or a member of quarantine-guardians).]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_count() {
    local -i ret=1
    local -ar arg_specs=(
        '--json[Print one JSON object ({"in_vault"\: ..., "asked_back"\: ..., "by_status"\: {...}}).]'
        '--user[The protected account to act on (a guardian\: root or a member of quarantine-guardians).]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_guardian() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'set-pin:Set or change the guardian PIN (4 to 12 digits; only a slow salted hash is kept).'
            'enable:Protect an account with the system guardian service (as root): child mode the account cannot change.'
            'disable:Stop protecting an account (as root). Its vault, database and configuration stay.'
            'status:Show which accounts a guardian service protects, and how each is doing.'
            'serve:Run the guardian service for an account in the foreground (what quarantine-guardian@USER.service runs).'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        set-pin|enable|disable|status|serve)
            "_quarantine_guardian_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_quarantine_guardian_set-pin() {
    local -i ret=1
    local -ar arg_specs=(
        '--pin-stdin[Read the PINs from standard input, one a line (current PIN first when changing it).]'
        '--user[The protected account to act on (a guardian\: root or a member of quarantine-guardians).]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_guardian_enable() {
    local -i ret=1
    local -ar arg_specs=(
        '--user[The account to protect.]:user:'
        '*--outgoing[A folder whose new files are checked before they leave (repeatable).]:dir:'
        '--pin-stdin[Read the guardian PIN (twice) from standard input instead of the terminal.]'
        '--no-pin[Do not set a guardian PIN now (the account cannot release anything until one is set).]'
        '--allow-private-mounts[Do not install pam_quarantine for the account\: it keeps FUSE mounts, Flatpak apps and rootless containers, and can mount a folder the service does not see.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_guardian_disable() {
    local -i ret=1
    local -ar arg_specs=(
        '--user[The protected account.]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_guardian_status() {
    local -i ret=1
    local -ar arg_specs=(
        '--user[Only this account.]:user:'
        '--json[Print one JSON object per account.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_guardian_serve() {
    local -i ret=1
    local -ar arg_specs=(
        '--user[The protected account.]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_mode() {
    local -i ret=1
    local -ar _mode=('adult' 'child')
    local -ar arg_specs=(
        ':mode:{__quarantine_complete "${_mode[@]}"}'
        '--json[Showing the mode\: print one JSON object ({"mode"\: ..., "note"\: why, when it is not the configuration'\''s}).]'
        '--user[The protected account to act on (a guardian\: root or a member of quarantine-guardians).]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_config() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'show:Print the configuration in force: the built-in defaults with the file'\''s values over them.'
            'check:Check a configuration file: TOML, known tables and keys, values each key takes.'
            'schema:Print the documented defaults (the conffile) or the Markdown table of every key.'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        show|check|schema)
            "_quarantine_config_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_quarantine_config_show() {
    local -i ret=1
    local -ar arg_specs=(
        '--config[Configuration file (default\: ~/.config/quarantine/config.toml).]:file:'
        '--json[Print JSON.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_config_check() {
    local -i ret=1
    local -ar arg_specs=(
        ':file:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_config_schema() {
    local -i ret=1
    local -ar arg_specs=(
        '--markdown[The Markdown table (docs/configuration.md) instead of the conffile.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_service() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'install:Write the systemd user unit for this binary, enable it and start it.'
            'uninstall:Stop and disable the user service and remove its unit and D-Bus service file (the vault and its items stay).'
            'status:Is the unit installed, enabled and active (see '\''quarantine status'\'' for the agent itself).'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        install|uninstall|status)
            "_quarantine_service_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_quarantine_service_install() {
    local -i ret=1
    local -ar arg_specs=(
        '--binary[The quarantine binary the unit runs (default\: this one).]:path:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_service_uninstall() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_service_status() {
    local -i ret=1
    local -ar arg_specs=(
        '--json[Print one JSON object instead of text.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_testcard() {
    local -i ret=1
    local -ar arg_specs=(
        '--size[Size in pixels, WIDTHxHEIGHT.]:WxH:'
        '--inset[Draw the card over only this share of the picture'\''s width and of its height, in the middle of a grey frame (50-100; 50 covers a quarter of the picture).]:percent:'
        '--quality[JPEG quality, 1-100.]:quality:'
        '--force[Replace FILE if it exists.]'
        ':file:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_doctor() {
    local -i ret=1
    local -ar arg_specs=(
        '--json[Print one JSON object instead of text.]'
        '--repair[Move a damaged audit database aside, and list again the vault'\''s files that the database lost, from their meta.json.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_review() {
    local -i ret=1
    local -ar arg_specs=(
        '--print-url[Print the address (with its secret) and do not open a browser.]'
        '--item[Open the page at this item.]:id:'
        '--idle-timeout[Stop after this long without a request\: seconds, or with s, m or h (default 10m).]:time:'
        '--config[Configuration file (default\: ~/.config/quarantine/config.toml).]:file:'
        '--user[The protected account to act on (a guardian\: root or a member of quarantine-guardians).]:user:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_quarantine_help() {
    local -i ret=1
    local -ar arg_specs=(
        '*:subcommands:'
        '--version[Show the version.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

if [[ "${funcstack[1]}" = _quarantine ]]; then
    _quarantine "${@}"
else
    compdef _quarantine quarantine
fi
