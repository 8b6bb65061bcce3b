#!/bin/bash
# sudo with OSWorld's user/password semantics for the sandboxed desktop: the password
# (__PASSWORD__) is checked like sudo does (-S: from stdin; else from the terminal); the command
# then runs as this user, because the sandbox has no root to give.
set -u
stdin=0 noninteractive=0 reset=0 login=0 shell=0 list=0 validate=0 target=root
prompt="[sudo] password for ${USER:-user}: "
stamp="${XDG_RUNTIME_DIR:-/tmp}/.sudo-timestamp"
usage() { echo "usage: sudo [-AbEHknPS] [-p prompt] [-u user] [command [arg ...]]" >&2; exit 1; }
while [ $# -gt 0 ]; do
    case "$1" in
        --) shift; break ;;
        --stdin) stdin=1 ;;
        --non-interactive) noninteractive=1 ;;
        --reset-timestamp|--remove-timestamp) reset=1 ;;
        --login) login=1 ;;
        --shell) shell=1 ;;
        --list) list=1 ;;
        --validate) validate=1 ;;
        --preserve-env|--preserve-env=*|--set-home|--background) ;;
        --user=*) target="${1#--user=}" ;;
        --user) shift; target="${1:-}" ;;
        --prompt=*) prompt="${1#--prompt=}" ;;
        --prompt) shift; prompt="${1:-}" ;;
        --version) echo "Sudo version 1.9.13p3 (desktop sandbox: runs commands as ${USER:-user})"; exit 0 ;;
        --help) usage ;;
        -[!-]*)
            flags="${1#-}"
            while [ -n "$flags" ]; do
                f="${flags:0:1}"; flags="${flags:1}"
                case "$f" in
                    S) stdin=1 ;; n) noninteractive=1 ;; k|K) reset=1 ;; i) login=1 ;;
                    s) shell=1 ;; l) list=1 ;; v) validate=1 ;; E|H|A|P|b) ;;
                    u|p|g|C|D|h|r|t|U|T)
                        if [ -n "$flags" ]; then val="$flags"; flags=""
                        else shift; val="${1:-}"; fi
                        case "$f" in u) target="$val" ;; p) prompt="$val" ;; esac ;;
                    V) echo "Sudo version 1.9.13p3 (desktop sandbox: runs commands as ${USER:-user})"; exit 0 ;;
                    *) echo "sudo: invalid option -- '$f'" >&2; usage ;;
                esac
            done ;;
        *) break ;;
    esac
    shift
done
case "$target" in
    root|0|'#0'|user|1000|'#1000') ;;
    *) echo "sudo: unknown user $target" >&2; exit 1 ;;
esac
[ "$reset" = 1 ] && rm -f "$stamp"
if [ "$list" = 1 ]; then
    echo "User ${USER:-user} may run the following commands on $(hostname):"
    echo "    (ALL : ALL) ALL"
    exit 0
fi
if [ $# -eq 0 ] && [ "$login" = 0 ] && [ "$shell" = 0 ] && [ "$validate" = 0 ]; then
    [ "$reset" = 1 ] && exit 0
    usage
fi
fresh() { [ -f "$stamp" ] && [ -n "$(find "$stamp" -mmin -15 2>/dev/null)" ]; }
if ! fresh; then
    if [ "$noninteractive" = 1 ]; then echo "sudo: a password is required" >&2; exit 1; fi
    if [ "$stdin" = 0 ] && ! { : </dev/tty; } 2>/dev/null; then
        echo "sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper" >&2
        echo "sudo: a password is required" >&2
        exit 1
    fi
    ok=0
    for attempt in 1 2 3; do
        if [ "$stdin" = 1 ]; then
            printf '%s' "$prompt" >&2
            IFS= read -r pw || { echo >&2; echo "sudo: no password was provided" >&2; exit 1; }
        else
            printf '%s' "$prompt" >/dev/tty
            IFS= read -rs pw </dev/tty || exit 1
            echo >/dev/tty
        fi
        if [ "$pw" = "__PASSWORD__" ]; then ok=1; break; fi
        sleep 1
        echo "Sorry, try again." >&2
    done
    if [ "$ok" = 0 ]; then echo "sudo: 3 incorrect password attempts" >&2; exit 1; fi
    : >"$stamp"
fi
[ "$validate" = 1 ] && [ $# -eq 0 ] && exit 0
export SUDO_USER="${USER:-user}" SUDO_UID="$(id -u)" SUDO_GID="$(id -g)" SUDO_COMMAND="$*"
if [ "$login" = 1 ]; then
    if [ $# -eq 0 ]; then exec bash -l; fi
    exec bash -lc "$*"
fi
if [ "$shell" = 1 ]; then
    if [ $# -eq 0 ]; then exec "${SHELL:-/bin/bash}"; fi
    exec "${SHELL:-/bin/bash}" -c "$*"
fi
if ! command -v -- "$1" >/dev/null 2>&1; then echo "sudo: $1: command not found" >&2; exit 1; fi
exec "$@"
