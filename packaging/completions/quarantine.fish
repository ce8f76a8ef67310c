function __quarantine_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __quarantine_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __quarantine_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __quarantine_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __quarantine_parse_tokens -S
    set -l unparsed_tokens (__quarantine_tokens -pc)
    switch $unparsed_tokens[1]
    case 'quarantine'
        __quarantine_parse_subcommand 0 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'agent'
            __quarantine_parse_subcommand 0 'config=' 'workers=' 'log-level=' 'version' 'h/help'
        case 'status'
            __quarantine_parse_subcommand 0 'json' 'user=' 'version' 'h/help'
        case 'watch'
            __quarantine_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'list'
                __quarantine_parse_subcommand 0 'json' 'user=' 'version' 'h/help'
            case 'add'
                __quarantine_parse_subcommand 1 'outgoing' 'user=' 'version' 'h/help'
            case 'remove'
                __quarantine_parse_subcommand 1 'user=' 'version' 'h/help'
            end
        case 'scan'
            __quarantine_parse_subcommand -r 1 'json' 'v/verbose' 'all' 'quarantine' 'mode=' 'config=' 'workers=' 'version' 'h/help'
        case 'stream'
            __quarantine_parse_subcommand 1 'json' 'mode=' 'config=' 'judges=' 'max-rate=' 'no-pacing' 'blur-to=' 'version' 'h/help'
        case 'session-forwarder'
            __quarantine_parse_subcommand 0 'log-level=' 'version' 'h/help'
        case 'list'
            __quarantine_parse_subcommand 0 'json' 'all' 'user=' 'version' 'h/help'
        case 'show'
            __quarantine_parse_subcommand 1 'open' 'json' 'user=' 'version' 'h/help'
        case 'release'
            __quarantine_parse_subcommand 1 'to=' 'y/yes' 'ask' 'user=' 'version' 'h/help'
        case 'block'
            __quarantine_parse_subcommand 1 'keep' 'origin' 'y/yes' 'user=' 'version' 'h/help'
        case 'history'
            __quarantine_parse_subcommand 0 'json' 'user=' 'version' 'h/help'
        case 'purge'
            __quarantine_parse_subcommand 0 'older-than=' 'y/yes' 'user=' 'version' 'h/help'
        case 'count'
            __quarantine_parse_subcommand 0 'json' 'user=' 'version' 'h/help'
        case 'guardian'
            __quarantine_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'set-pin'
                __quarantine_parse_subcommand 0 'pin-stdin' 'user=' 'version' 'h/help'
            case 'enable'
                __quarantine_parse_subcommand 0 'user=' 'outgoing=+' 'pin-stdin' 'no-pin' 'allow-private-mounts' 'version' 'h/help'
            case 'disable'
                __quarantine_parse_subcommand 0 'user=' 'version' 'h/help'
            case 'status'
                __quarantine_parse_subcommand 0 'user=' 'json' 'version' 'h/help'
            case 'serve'
                __quarantine_parse_subcommand 0 'user=' 'version' 'h/help'
            end
        case 'mode'
            __quarantine_parse_subcommand 1 'json' 'user=' 'version' 'h/help'
        case 'config'
            __quarantine_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'show'
                __quarantine_parse_subcommand 0 'config=' 'json' 'version' 'h/help'
            case 'check'
                __quarantine_parse_subcommand 1 'version' 'h/help'
            case 'schema'
                __quarantine_parse_subcommand 0 'markdown' 'version' 'h/help'
            end
        case 'service'
            __quarantine_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'install'
                __quarantine_parse_subcommand 0 'binary=' 'version' 'h/help'
            case 'uninstall'
                __quarantine_parse_subcommand 0 'version' 'h/help'
            case 'status'
                __quarantine_parse_subcommand 0 'json' 'version' 'h/help'
            end
        case 'testcard'
            __quarantine_parse_subcommand 1 'size=' 'inset=' 'quality=' 'force' 'version' 'h/help'
        case 'doctor'
            __quarantine_parse_subcommand 0 'json' 'repair' 'version' 'h/help'
        case 'review'
            __quarantine_parse_subcommand 0 'print-url' 'item=' 'idle-timeout=' 'config=' 'user=' 'version' 'h/help'
        case 'help'
            __quarantine_parse_subcommand -r 1 'version'
        end
    end
end

function __quarantine_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __quarantine_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __quarantine_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __quarantine_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__quarantine_tokens -p)
    if test -z "$(__quarantine_tokens -t)"
        set -l index (count (__quarantine_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'quarantine' -f
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'agent' -d 'Watch the folders where media arrives and hide what is sensitive (what the user service runs).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'status' -d 'Is the agent running; what it watches, what waits and what it is checking now.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'watch' -d 'Add, remove or list the folders the agent watches.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'scan' -d 'Check files and folders for nudity (read-only unless --quarantine).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'stream' -d 'Analyse a live video (a V4L2 camera, a pipe, a file played at its own rate) and print each change of advice.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'session-forwarder' -d 'Answer applications on the session bus of an account a guardian service protects.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'list' -d 'List what is in the vault, newest first.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'show' -d 'Show one item: where it came from, why it was hidden, and its blurred preview.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'release' -d 'Put a file back where it was (or --to DIR), exactly as it was. Nothing is overwritten.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'block' -d 'Delete a quarantined file (or keep it sealed) and block its contents from coming back.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'history' -d 'Show the audit log: every quarantine, release, block and error, newest first.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'purge' -d 'Delete vault items older than a number of days: lists them, asks, and records each one.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'count' -d 'Say how many items the vault holds, how many were asked back, and how many it held before, by state.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'guardian' -d 'The guardian: the PIN child mode asks for, and the system service that protects a child\'s account.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'mode' -d 'Show or change the mode: adult or child. Entering child mode needs a guardian PIN set; leaving it needs that PIN.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'config' -d 'Show or check the configuration; print its schema.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'service' -d 'Install, remove or inspect the systemd user service that runs the agent.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'testcard' -d 'Write the synthetic test card: a harmless picture always reported as sensitive (TEST_CARD).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'doctor' -d 'Check the installation: runtime, models (sha256), decoders, inotify limits, file locations.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'review' -d 'Review hidden items in the browser: a local page for this session.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine agent" config' -l 'config' -d 'Configuration file (default: ~/.config/quarantine/config.toml).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine agent" workers' -l 'workers' -d 'Files analysed at once (default: the configuration\'s, one per core).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine agent" log-level' -l 'log-level' -d 'Least important log level shown: debug, info, notice, warning, error.' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine agent" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine agent" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine status" json' -l 'json' -d 'Print JSON.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine status" user' -l 'user' -d 'The protected account to act on (a guardian: root or a member of quarantine-guardians).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine status" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine watch" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine watch" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine watch" -eq 1' -fa 'list' -d 'List the watched folders.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine watch" -eq 1' -fa 'add' -d 'Watch another folder.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine watch" -eq 1' -fa 'remove' -d 'Stop watching a folder (nothing in it is touched).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine watch list" json' -l 'json' -d 'Print JSON.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine watch list" user' -l 'user' -d 'The protected account to act on (a guardian: root or a member of quarantine-guardians).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine watch list" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine watch list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine watch add" outgoing' -l 'outgoing' -d 'A shared or synced folder: check what is put there before it leaves (child mode only).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine watch add" user' -l 'user' -d 'The protected account to act on (a guardian: root or a member of quarantine-guardians).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine watch add" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine watch add" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine watch remove" user' -l 'user' -d 'The protected account to act on (a guardian: root or a member of quarantine-guardians).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine watch remove" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine watch remove" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine scan" json' -l 'json' -d 'Print one JSON object per file (JSON Lines) instead of text.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine scan" v verbose' -s 'v' -l 'verbose' -d 'Also list files that are not flagged.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine scan" all' -l 'all' -d 'Videos: list every flagged time range instead of stopping at the first flagged frame.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine scan" quarantine' -l 'quarantine' -d 'Move what is flagged into the vault (see \'quarantine list\'); like clamscan --move, but restorable.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine scan" mode' -l 'mode' -d 'Policy to judge by: adult or child (default: the config file\'s mode).' -rfka 'adult child'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine scan" config' -l 'config' -d 'Configuration file (default: ~/.config/quarantine/config.toml).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine scan" workers' -l 'workers' -d 'Files analysed at once (default: one per core).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine scan" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine scan" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine stream" json' -l 'json' -d 'Print one JSON object per line (each change, then a summary) instead of text.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine stream" mode' -l 'mode' -d 'Policy to judge by: adult or child (default: the config file\'s mode).' -rfka 'adult child'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine stream" config' -l 'config' -d 'Configuration file (default: ~/.config/quarantine/config.toml).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine stream" judges' -l 'judges' -d 'Frames judged at once, each on its own thread (default 1).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine stream" max-rate' -l 'max-rate' -d 'At most this many judgements a second, the newest frame each time (default 8; 0: as fast as the judges go).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine stream" no-pacing' -l 'no-pacing' -d 'Decode a file as fast as possible instead of at its own rate (frames the judges cannot keep up with are dropped).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine stream" blur-to' -l 'blur-to' -d 'Write every frame, blurred while flagged, to a v4l2loopback device (/dev/videoM), a file or \'-\' (YUV4MPEG; .nut: NUT).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine stream" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine stream" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine session-forwarder" log-level' -l 'log-level' -d 'Least important log level shown: debug, info, notice, warning, error.' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine session-forwarder" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine session-forwarder" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine list" json' -l 'json' -d 'Print one JSON object per item (JSON Lines).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine list" all' -l 'all' -d 'Also list released, blocked and purged items.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine list" user' -l 'user' -d 'The protected account to act on (a guardian: root or a member of quarantine-guardians).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine list" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine show" open' -l 'open' -d 'Open the blurred preview (never the original) with xdg-open.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine show" json' -l 'json' -d 'Print one JSON object.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine show" user' -l 'user' -d 'The protected account to act on (a guardian: root or a member of quarantine-guardians).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine show" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine show" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine release" to' -l 'to' -d 'Restore into this folder instead of the original one.' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine release" y yes' -s 'y' -l 'yes' -d 'Do not ask for confirmation.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine release" ask' -l 'ask' -d 'Child mode: ask the guardian to release it, without the PIN. The request is recorded and shown in \'quarantine list\'; nothing is released. (Pressing Enter at the PIN prompt does the same.)'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine release" user' -l 'user' -d 'The protected account to act on (a guardian: root or a member of quarantine-guardians).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine release" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine release" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine block" keep' -l 'keep' -d 'Keep the file sealed in the vault instead of deleting it.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine block" origin' -l 'origin' -d 'Also block the site in its origin URL.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine block" y yes' -s 'y' -l 'yes' -d 'Do not ask for confirmation.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine block" user' -l 'user' -d 'The protected account to act on (a guardian: root or a member of quarantine-guardians).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine block" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine block" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine history" json' -l 'json' -d 'Print one JSON object per event (JSON Lines).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine history" user' -l 'user' -d 'The protected account to act on (a guardian: root or a member of quarantine-guardians).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine history" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine history" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine purge" older-than' -l 'older-than' -d 'Only items hidden more than this many days ago.' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine purge" y yes' -s 'y' -l 'yes' -d 'Do not ask for confirmation.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine purge" user' -l 'user' -d 'The protected account to act on (a guardian: root or a member of quarantine-guardians).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine purge" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine purge" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine count" json' -l 'json' -d 'Print one JSON object ({"in_vault": ..., "asked_back": ..., "by_status": {...}}).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine count" user' -l 'user' -d 'The protected account to act on (a guardian: root or a member of quarantine-guardians).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine count" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine count" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine guardian" -eq 1' -fa 'set-pin' -d 'Set or change the guardian PIN (4 to 12 digits; only a slow salted hash is kept).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine guardian" -eq 1' -fa 'enable' -d 'Protect an account with the system guardian service (as root): child mode the account cannot change.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine guardian" -eq 1' -fa 'disable' -d 'Stop protecting an account (as root). Its vault, database and configuration stay.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine guardian" -eq 1' -fa 'status' -d 'Show which accounts a guardian service protects, and how each is doing.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine guardian" -eq 1' -fa 'serve' -d 'Run the guardian service for an account in the foreground (what quarantine-guardian@USER.service runs).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian set-pin" pin-stdin' -l 'pin-stdin' -d 'Read the PINs from standard input, one a line (current PIN first when changing it).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian set-pin" user' -l 'user' -d 'The protected account to act on (a guardian: root or a member of quarantine-guardians).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian set-pin" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian set-pin" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian enable" user' -l 'user' -d 'The account to protect.' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian enable"' -l 'outgoing' -d 'A folder whose new files are checked before they leave (repeatable).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian enable" pin-stdin' -l 'pin-stdin' -d 'Read the guardian PIN (twice) from standard input instead of the terminal.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian enable" no-pin' -l 'no-pin' -d 'Do not set a guardian PIN now (the account cannot release anything until one is set).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian enable" allow-private-mounts' -l 'allow-private-mounts' -d 'Do not install pam_quarantine for the account: it keeps FUSE mounts, Flatpak apps and rootless containers, and can mount a folder the service does not see.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian enable" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian enable" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian disable" user' -l 'user' -d 'The protected account.' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian disable" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian disable" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian status" user' -l 'user' -d 'Only this account.' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian status" json' -l 'json' -d 'Print one JSON object per account.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian status" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian serve" user' -l 'user' -d 'The protected account.' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian serve" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine guardian serve" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine mode" -eq 1' -fka 'adult child'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine mode" json' -l 'json' -d 'Showing the mode: print one JSON object ({"mode": ..., "note": why, when it is not the configuration\'s}).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine mode" user' -l 'user' -d 'The protected account to act on (a guardian: root or a member of quarantine-guardians).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine mode" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine mode" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine config" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine config" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine config" -eq 1' -fa 'show' -d 'Print the configuration in force: the built-in defaults with the file\'s values over them.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine config" -eq 1' -fa 'check' -d 'Check a configuration file: TOML, known tables and keys, values each key takes.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine config" -eq 1' -fa 'schema' -d 'Print the documented defaults (the conffile) or the Markdown table of every key.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine config show" config' -l 'config' -d 'Configuration file (default: ~/.config/quarantine/config.toml).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine config show" json' -l 'json' -d 'Print JSON.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine config show" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine config show" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine config check" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine config check" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine config schema" markdown' -l 'markdown' -d 'The Markdown table (docs/configuration.md) instead of the conffile.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine config schema" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine config schema" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine service" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine service" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine service" -eq 1' -fa 'install' -d 'Write the systemd user unit for this binary, enable it and start it.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine service" -eq 1' -fa 'uninstall' -d 'Stop and disable the user service and remove its unit and D-Bus service file (the vault and its items stay).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_positional "quarantine service" -eq 1' -fa 'status' -d 'Is the unit installed, enabled and active (see \'quarantine status\' for the agent itself).'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine service install" binary' -l 'binary' -d 'The quarantine binary the unit runs (default: this one).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine service install" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine service install" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine service uninstall" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine service uninstall" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine service status" json' -l 'json' -d 'Print one JSON object instead of text.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine service status" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine service status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine testcard" size' -l 'size' -d 'Size in pixels, WIDTHxHEIGHT.' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine testcard" inset' -l 'inset' -d 'Draw the card over only this share of the picture\'s width and of its height, in the middle of a grey frame (50-100; 50 covers a quarter of the picture).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine testcard" quality' -l 'quality' -d 'JPEG quality, 1-100.' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine testcard" force' -l 'force' -d 'Replace FILE if it exists.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine testcard" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine testcard" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine doctor" json' -l 'json' -d 'Print one JSON object instead of text.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine doctor" repair' -l 'repair' -d 'Move a damaged audit database aside, and list again the vault\'s files that the database lost, from their meta.json.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine doctor" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine doctor" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine review" print-url' -l 'print-url' -d 'Print the address (with its secret) and do not open a browser.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine review" item' -l 'item' -d 'Open the page at this item.' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine review" idle-timeout' -l 'idle-timeout' -d 'Stop after this long without a request: seconds, or with s, m or h (default 10m).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine review" config' -l 'config' -d 'Configuration file (default: ~/.config/quarantine/config.toml).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine review" user' -l 'user' -d 'The protected account to act on (a guardian: root or a member of quarantine-guardians).' -rfka ''
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine review" version' -l 'version' -d 'Show the version.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine review" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'quarantine' -n '__quarantine_should_offer_completions_for_flags_or_options "quarantine help" version' -l 'version' -d 'Show the version.'
