#!/usr/bin/env bash
# Container entrypoint: X display, the session (window manager, session bus, AT-SPI) in the
# nest, then the guest server. The token comes from env DESKTOP_SERVER_TOKEN (never written to a
# log, never seen by the session). Starts as root (the provider runs it so) only to make the
# nest: Xvfb, the session and the server all run as `user`.
#
# The nest (computer_env/desktop/server/commands/nest_root.py) is what the local sandbox has
# (computer_env/desktop/server/commands/nest.py) with sudo kept real: everything the agent can start runs
# in its own pid namespace, where no program, root included, can see, signal or trace the server
# or Xvfb, nor change what they load. Started as another user (an old run configuration), the
# entrypoint runs everything in one tree as before, without that guarantee, and says so.
set -euo pipefail

export DISPLAY="${DISPLAY:-:0}"
export HOME=/home/user USER=user LOGNAME=user
export XDG_SESSION_TYPE=x11
export SAL_USE_VCLPLUGIN=gtk3
export NO_AT_BRIDGE=0
export XDG_RUNTIME_DIR=/run/user/1000
export DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus
cd "$HOME"

wm_ready() { xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q "window id"; }
session() {
    dbus-update-activation-environment DISPLAY >/dev/null 2>&1 &
    /usr/libexec/at-spi-bus-launcher --launch-immediately >/tmp/at-spi.log 2>&1 &
    # start openbox until it owns the screen (it can fail on a display that just came up)
    for _try in 1 2 3 4 5; do
        openbox >>/tmp/openbox.log 2>&1 &
        for _i in $(seq 50); do
            wm_ready && break 2
            sleep 0.1
        done
    done
    # pyautogui types "<" as shift+keycode 94 (pc105, first to carry `less`) = ">": remap it
    xmodmap -e "keycode 94 = comma less comma less" 2>/dev/null || echo "xmodmap failed" >&2
}

if [ "${1:-}" = nest ]; then  # inside the nest (started by its init), as `user`
    exec 7>"$2"
    dbus-daemon --config-file=/etc/holo-session-bus.conf --fork --nopidfile >/dev/null \
        || { echo "the session bus did not start" >&2; echo 95 >&7; exit 95; }
    session
    echo 0 >&7
    exit 0  # the session's programs live on, reaped by the nest's init
fi


# /tmp is a fresh size-capped tmpfs: the X socket folder must be made (Xvfb, not root, won't)
mkdir -m 1777 -p /tmp/.X11-unix 2>/dev/null || true
# -noreset: no server reset when the last client leaves (a check right then would fail)
xvfb=(Xvfb "$DISPLAY" -screen 0 "${SCREEN_WIDTH}x${SCREEN_HEIGHT}x24" -nolisten tcp -noreset
      -extension GLX)
if [ "$(id -u)" = 0 ]; then setpriv --reuid=1000 --regid=1000 --init-groups "${xvfb[@]}" >/tmp/xvfb.log 2>&1 &
else "${xvfb[@]}" >/tmp/xvfb.log 2>&1 &
fi

# Wait for the display (readiness with a timeout, not a fixed sleep).
up=0
for _ in $(seq 1 1200); do
    if xdpyinfo >/dev/null 2>&1; then up=1; break; fi
    sleep 0.05
done
[ "$up" = 1 ] || { echo "entrypoint: Xvfb on $DISPLAY did not come up in 60s" >&2; cat /tmp/xvfb.log >&2; exit 1; }

if [ "$(id -u)" != 0 ]; then
    echo "entrypoint: not started as root: no nest (a kill typed by the agent can reach the server)" >&2
    exec dbus-run-session --config-file=/etc/holo-session-bus.conf -- bash -c \
        "$(declare -f wm_ready session); session; exec python -s -m computer_env.desktop.server --host 0.0.0.0 --port '${SERVER_PORT}' \"\$@\"" \
        server "$@"
fi

ready=/run/holo-nest.ready
rm -f "$ready" && mkfifo -m 0600 "$ready" && chown user:user "$ready"
exec 6<>"$ready"
env -u DESKTOP_SERVER_TOKEN python -s -m computer_env.desktop.server.commands.nest_root \
    --as 1000:1000 /run/holo-nest.pid /bin/bash "$0" nest "$ready" \
    || { echo "entrypoint: the nest did not start" >&2; exit 96; }
read -r -t 60 -u 6 rc || { echo "entrypoint: the nest's session did not start within 60 s" >&2; exit 96; }
[ "$rc" = 0 ] || exit "$rc"
exec 6>&-
rm -f "$ready"
DESKTOP_NEST_PID=$(cat /run/holo-nest.pid)
export DESKTOP_NEST_PID
# -s: the server's Python never imports from ~/.local, where the agent may write
exec setpriv --reuid=1000 --regid=1000 --init-groups \
    python -s -m computer_env.desktop.server --host 0.0.0.0 --port "${SERVER_PORT}" "$@"
