#!/bin/bash

__quarantine_cursor_index_in_current_word() {
    local remaining="${COMP_LINE}"

    local word
    for word in "${COMP_WORDS[@]::COMP_CWORD}"; do
        remaining="${remaining##*([[:space:]])"${word}"*([[:space:]])}"
    done

    local -ir index="$((COMP_POINT - ${#COMP_LINE} + ${#remaining}))"
    if [[ "${index}" -le 0 ]]; then
        printf 0
    else
        printf %s "${index}"
    fi
}

# positional arguments:
#
# - 1: the current (sub)command's count of positional arguments
#
# required variables:
#
# - repeating_flags: the repeating flags that the current (sub)command can accept
# - non_repeating_flags: the non-repeating flags that the current (sub)command can accept
# - repeating_options: the repeating options that the current (sub)command can accept
# - non_repeating_options: the non-repeating options that the current (sub)command can accept
# - positional_number: value ignored
# - unparsed_words: unparsed words from the current command line
#
# modified variables:
#
# - non_repeating_flags: remove flags for this (sub)command that are already on the command line
# - non_repeating_options: remove options for this (sub)command that are already on the command line
# - positional_number: set to the current positional number
# - unparsed_words: remove all flags, options, and option values for this (sub)command
__quarantine_offer_flags_options() {
    local -ir positional_count="${1}"
    positional_number=0

    local was_flag_option_terminator_seen=false
    local is_parsing_option_value=false

    local -ar unparsed_word_indices=("${!unparsed_words[@]}")
    local -i word_index
    for word_index in "${unparsed_word_indices[@]}"; do
        if "${is_parsing_option_value}"; then
            # This word is an option value:
            # Reset marker for next word iff not currently the last word
            [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]] && is_parsing_option_value=false
            unset "unparsed_words[${word_index}]"
            # Do not process this word as a flag or an option
            continue
        fi

        local word="${unparsed_words["${word_index}"]}"
        if ! "${was_flag_option_terminator_seen}"; then
            case "${word}" in
            --)
                unset "unparsed_words[${word_index}]"
                # by itself -- is a flag/option terminator, but if it is the last word, it is the start of a completion
                if [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]]; then
                    was_flag_option_terminator_seen=true
                fi
                continue
                ;;
            -*)
                # ${word} is a flag or an option
                # If ${word} is an option, mark that the next word to be parsed is an option value
                local option
                for option in "${repeating_options[@]}" "${non_repeating_options[@]}"; do
                    [[ "${word}" = "${option}" ]] && is_parsing_option_value=true && break
                done

                # Remove ${word} from ${non_repeating_flags} or ${non_repeating_options} so it isn't offered again
                local not_found=true
                local -i index
                for index in "${!non_repeating_flags[@]}"; do
                    if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                        unset "non_repeating_flags[${index}]"
                        non_repeating_flags=("${non_repeating_flags[@]}")
                        not_found=false
                        break
                    fi
                done
                if "${not_found}"; then
                    for index in "${!non_repeating_flags[@]}"; do
                        if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                            unset "non_repeating_flags[${index}]"
                            non_repeating_flags=("${non_repeating_flags[@]}")
                            break
                        fi
                    done
                fi
                unset "unparsed_words[${word_index}]"
                continue
                ;;
            esac
        fi

        # ${word} is neither a flag, nor an option, nor an option value
        if [[ "${positional_number}" -lt "${positional_count}" || "${positional_count}" -lt 0 ]]; then
            # ${word} is a positional
            ((positional_number++))
            unset "unparsed_words[${word_index}]"
        else
            if [[ -z "${word}" ]]; then
                # Could be completing a flag, option, or subcommand
                positional_number=-1
            else
                # ${word} is a subcommand or invalid, so stop processing this (sub)command
                positional_number=-2
            fi
            break
        fi
    done

    unparsed_words=("${unparsed_words[@]}")

    if\
        ! "${was_flag_option_terminator_seen}"\
        && ! "${is_parsing_option_value}"\
        && [[ ("${cur}" = -* && "${positional_number}" -ge 0) || "${positional_number}" -eq -1 ]]
    then
        COMPREPLY+=($(compgen -W "${repeating_flags[*]} ${non_repeating_flags[*]} ${repeating_options[*]} ${non_repeating_options[*]}" -- "${cur}"))
    fi
}

__quarantine_add_completions() {
    local completion
    while IFS='' read -r completion; do
        COMPREPLY+=("${completion}")
    done < <(IFS=$'\n' compgen "${@}" -- "${cur}")
}

__quarantine_custom_complete() {
    if [[ -n "${cur}" || -z ${COMP_WORDS[${COMP_CWORD}]} || "${COMP_LINE:${COMP_POINT}:1}" != ' ' ]]; then
        local -ar words=("${COMP_WORDS[@]}")
    else
        local -ar words=("${COMP_WORDS[@]::${COMP_CWORD}}" '' "${COMP_WORDS[@]:${COMP_CWORD}}")
    fi

    "${COMP_WORDS[0]}" "${@}" "${words[@]}"
}

_quarantine() {
    local state
    state="$(shopt -p;shopt -po)"
    trap "${state//$'\n'/;}" RETURN
    shopt -s extglob
    set +o history +o posix

    local -xr SAP_SHELL=bash
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(IFS='.';printf %s "${BASH_VERSINFO[*]}")"
    local -r SAP_SHELL_VERSION

    local -r cur="${2}"
    local -r prev="${3}"

    local -i positional_number
    local -a unparsed_words=("${COMP_WORDS[@]:1:${COMP_CWORD}}")

    local -a repeating_flags=()
    local -a non_repeating_flags=(--version -h --help)
    local -a repeating_options=()
    local -a non_repeating_options=()
    __quarantine_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    agent|status|watch|scan|stream|session-forwarder|list|show|release|block|history|purge|count|guardian|mode|config|service|testcard|doctor|review|help)
        # Offer subcommand argument completions
        "_quarantine_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'agent status watch scan stream session-forwarder list show release block history purge count guardian mode config service testcard doctor review help' -- "${cur}"))
        ;;
    esac
}

_quarantine_agent() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--config --workers --log-level)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--config')
        return
        ;;
    '--workers')
        return
        ;;
    '--log-level')
        return
        ;;
    esac
}

_quarantine_status() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    esac
}

_quarantine_watch() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __quarantine_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    list|add|remove)
        # Offer subcommand argument completions
        "_quarantine_watch_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'list add remove' -- "${cur}"))
        ;;
    esac
}

_quarantine_watch_list() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    esac
}

_quarantine_watch_add() {
    repeating_flags=()
    non_repeating_flags=(--outgoing --version -h --help)
    repeating_options=()
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    esac
}

_quarantine_watch_remove() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    esac
}

_quarantine_scan() {
    repeating_flags=()
    non_repeating_flags=(--json -v --verbose --all --quarantine --version -h --help)
    repeating_options=()
    non_repeating_options=(--mode --config --workers)
    __quarantine_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--mode')
        __quarantine_add_completions -W 'adult'$'\n''child'
        return
        ;;
    '--config')
        return
        ;;
    '--workers')
        return
        ;;
    esac
}

_quarantine_stream() {
    repeating_flags=()
    non_repeating_flags=(--json --no-pacing --version -h --help)
    repeating_options=()
    non_repeating_options=(--mode --config --judges --max-rate --blur-to)
    __quarantine_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--mode')
        __quarantine_add_completions -W 'adult'$'\n''child'
        return
        ;;
    '--config')
        return
        ;;
    '--judges')
        return
        ;;
    '--max-rate')
        return
        ;;
    '--blur-to')
        return
        ;;
    esac
}

_quarantine_session-forwarder() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--log-level)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--log-level')
        return
        ;;
    esac
}

_quarantine_list() {
    repeating_flags=()
    non_repeating_flags=(--json --all --version -h --help)
    repeating_options=()
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    esac
}

_quarantine_show() {
    repeating_flags=()
    non_repeating_flags=(--open --json --version -h --help)
    repeating_options=()
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    esac
}

_quarantine_release() {
    repeating_flags=()
    non_repeating_flags=(-y --yes --ask --version -h --help)
    repeating_options=()
    non_repeating_options=(--to --user)
    __quarantine_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--to')
        return
        ;;
    '--user')
        return
        ;;
    esac
}

_quarantine_block() {
    repeating_flags=()
    non_repeating_flags=(--keep --origin -y --yes --version -h --help)
    repeating_options=()
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    esac
}

_quarantine_history() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    esac
}

_quarantine_purge() {
    repeating_flags=()
    non_repeating_flags=(-y --yes --version -h --help)
    repeating_options=()
    non_repeating_options=(--older-than --user)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--older-than')
        return
        ;;
    '--user')
        return
        ;;
    esac
}

_quarantine_count() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    esac
}

_quarantine_guardian() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __quarantine_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    set-pin|enable|disable|status|serve)
        # Offer subcommand argument completions
        "_quarantine_guardian_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'set-pin enable disable status serve' -- "${cur}"))
        ;;
    esac
}

_quarantine_guardian_set-pin() {
    repeating_flags=()
    non_repeating_flags=(--pin-stdin --version -h --help)
    repeating_options=()
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    esac
}

_quarantine_guardian_enable() {
    repeating_flags=()
    non_repeating_flags=(--pin-stdin --no-pin --allow-private-mounts --version -h --help)
    repeating_options=(--outgoing)
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    '--outgoing')
        return
        ;;
    esac
}

_quarantine_guardian_disable() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    esac
}

_quarantine_guardian_status() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    esac
}

_quarantine_guardian_serve() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    esac
}

_quarantine_mode() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--user)
    __quarantine_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--user')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __quarantine_add_completions -W 'adult'$'\n''child'
        return
        ;;
    esac
}

_quarantine_config() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __quarantine_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    show|check|schema)
        # Offer subcommand argument completions
        "_quarantine_config_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'show check schema' -- "${cur}"))
        ;;
    esac
}

_quarantine_config_show() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--config)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--config')
        return
        ;;
    esac
}

_quarantine_config_check() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __quarantine_offer_flags_options 1
}

_quarantine_config_schema() {
    repeating_flags=()
    non_repeating_flags=(--markdown --version -h --help)
    repeating_options=()
    non_repeating_options=()
    __quarantine_offer_flags_options 0
}

_quarantine_service() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __quarantine_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    install|uninstall|status)
        # Offer subcommand argument completions
        "_quarantine_service_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'install uninstall status' -- "${cur}"))
        ;;
    esac
}

_quarantine_service_install() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--binary)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--binary')
        return
        ;;
    esac
}

_quarantine_service_uninstall() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __quarantine_offer_flags_options 0
}

_quarantine_service_status() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=()
    __quarantine_offer_flags_options 0
}

_quarantine_testcard() {
    repeating_flags=()
    non_repeating_flags=(--force --version -h --help)
    repeating_options=()
    non_repeating_options=(--size --inset --quality)
    __quarantine_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--size')
        return
        ;;
    '--inset')
        return
        ;;
    '--quality')
        return
        ;;
    esac
}

_quarantine_doctor() {
    repeating_flags=()
    non_repeating_flags=(--json --repair --version -h --help)
    repeating_options=()
    non_repeating_options=()
    __quarantine_offer_flags_options 0
}

_quarantine_review() {
    repeating_flags=()
    non_repeating_flags=(--print-url --version -h --help)
    repeating_options=()
    non_repeating_options=(--item --idle-timeout --config --user)
    __quarantine_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--item')
        return
        ;;
    '--idle-timeout')
        return
        ;;
    '--config')
        return
        ;;
    '--user')
        return
        ;;
    esac
}

_quarantine_help() {
    repeating_flags=()
    non_repeating_flags=(--version)
    repeating_options=()
    non_repeating_options=()
    __quarantine_offer_flags_options -1
}

complete -o filenames -F _quarantine quarantine
