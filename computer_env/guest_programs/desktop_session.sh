#!/bin/bash
# One desktop session: Xvfb, the session (openbox, at-spi; in the nest when there is one), then
# the guest server (exec'd, stays the leader).
set -u
wm_ready() { xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q 'window id'; }
session() {
    # D-Bus-activated programs (gnome-terminal-server, dconf, gvfs) need the display too
    dbus-update-activation-environment DISPLAY >/dev/null 2>&1 &
    # openbox sometimes fails to open a display that Xvfb has just announced: start it until it
    # owns the screen (_NET_SUPPORTING_WM_CHECK on the root window), at most 5 tries of 5 s.
    for _try in 1 2 3 4 5; do
        $DESKTOP_GUARD openbox &
        obpid=$!
        for _i in $(seq 50); do
            wm_ready && break 2
            kill -0 "$obpid" 2>/dev/null || break
            sleep 0.1
        done
        echo "openbox not ready (try $_try); starting it again" >&2
        kill "$obpid" 2>/dev/null
    done
    wm_ready || { echo "openbox did not take the screen" >&2; return 94; }
    # pc105's extra key (keycode 94, absent on US keyboards) carries `less` first, so pyautogui
    # types "<" as shift+94 = ">": give it the comma key's symbols (then "<" is shift+comma)
    xmodmap -e "keycode 94 = comma less comma less" 2>/dev/null || echo "xmodmap failed" >&2
    $DESKTOP_GUARD /usr/libexec/at-spi-bus-launcher --launch-immediately >/dev/null 2>&1 &
    return 0
}
if [ "${1:-}" = nest ]; then  # inside the nest (started by its init): bus, display, session
    exec 7>"$2"
    dbus-daemon --config-file="$DESKTOP_BUS_CONFIG" --fork --nopidfile >/dev/null \
        || { echo "the session bus did not start" >&2; echo 95 >&7; exit 95; }
    for _i in $(seq 3000); do [ -s "$DESKTOP_SCRATCH/display" ] && break; sleep 0.01; done
    DISPLAY=$(cat "$DESKTOP_SCRATCH/display" 2>/dev/null) && export DISPLAY
    session; rc=$?
    echo "$rc" >&7
    exit "$rc"
fi
# the token's pipe: only the server (exec'd last) keeps it; every other command closes it
[ -n "${DESKTOP_TOKEN_FD:-}" ] || { echo "no token pipe (DESKTOP_TOKEN_FD)" >&2; exit 89; }
# moved to a descriptor bash picks (10 or above): clear of the 5, 6 and 7 used below
exec {tokfd}<&"$DESKTOP_TOKEN_FD" && exec {DESKTOP_TOKEN_FD}<&- || exit 89
unset DESKTOP_TOKEN_FD
cp -r "$DESKTOP_HOME_TEMPLATE/." "$HOME/" || exit 90
mkdir -p "$DESKTOP_SCRATCH" && cd "$HOME" || exit 91
if [ ! -d /tmp/.X11-unix ]; then mkdir -m 1777 /tmp/.X11-unix 2>/dev/null; fi
fifo="$DESKTOP_SCRATCH/xready.$$"
rm -f "$fifo"; mkfifo "$fifo" || exit 92
$DESKTOP_GUARD Xvfb $DESKTOP_DISPLAY -screen 0 "${DESKTOP_WIDTH}x${DESKTOP_HEIGHT}x24" \
    -nolisten tcp -dpi 96 -extension GLX -displayfd 5 5>"$fifo" {tokfd}<&- &
xpid=$!
if [ -n "${DESKTOP_NEST:-}" ]; then  # started while Xvfb starts; waits for its display
    ready="$DESKTOP_SCRATCH/nest.$$"
    mkfifo "$ready" && exec 6<>"$ready" || exit 92
    "$DESKTOP_PYTHON" -I -S "$DESKTOP_NEST" "$DESKTOP_SCRATCH/nest.pid" /bin/bash "$0" nest \
        "$ready" {tokfd}<&- || { echo "the nest did not start" >&2; exit 96; }
fi
if ! read -r -t 30 dnum <"$fifo"; then
    echo "Xvfb did not report a display within 30 s" >&2
    kill "$xpid" 2>/dev/null; exit 93
fi
rm -f "$fifo"
export DISPLAY=":$dnum"
echo "$DISPLAY" >"$DESKTOP_SCRATCH/display.tmp" && mv "$DESKTOP_SCRATCH/display.tmp" \
    "$DESKTOP_SCRATCH/display"
if [ -n "${DESKTOP_NEST:-}" ]; then
    read -r -t 60 -u 6 rc || { echo "the nest's session did not start within 60 s" >&2; exit 96; }
    [ "$rc" = 0 ] || exit "$rc"
    DESKTOP_NEST_PID=$(cat "$DESKTOP_SCRATCH/nest.pid") && export DESKTOP_NEST_PID || exit 96
    rm -f "$ready"
else
    session {tokfd}<&- || exit $?
fi
exec "$DESKTOP_PYTHON" -m computer_env.desktop.server --host "$DESKTOP_SERVER_HOST" \
    --port "$DESKTOP_SERVER_PORT" --token-fd "$tokfd"
