#!/usr/bin/env bash
# Container entrypoint: X display, window manager, session bus + AT-SPI, then the guest server.
# The token comes from env DESKTOP_SERVER_TOKEN (never written to a log). Runs as `user`
# (USER in the Dockerfile).
# Unlike the local sandbox (computer_env/desktop/server/commands/nest.py), the agent's side is NOT kept
# out of reach of Xvfb and the server here: `user` has sudo (OSWorld's guest convention), which
# reaches every process of the container, and Docker's seccomp profile forbids the user namespace
# a nest needs. A kill of the server from inside a container is still possible.
set -euo pipefail

export DISPLAY="${DISPLAY:-:0}"
export HOME="${HOME:-/home/user}"
export XDG_SESSION_TYPE=x11
export SAL_USE_VCLPLUGIN=gtk3
export NO_AT_BRIDGE=0
cd "$HOME"

# /tmp is a fresh size-capped tmpfs: the X socket folder must be made (Xvfb, not root, won't)
mkdir -m 1777 -p /tmp/.X11-unix 2>/dev/null || true
# -noreset: no server reset when the last client leaves (a check right then would fail)
Xvfb "$DISPLAY" -screen 0 "${SCREEN_WIDTH}x${SCREEN_HEIGHT}x24" -nolisten tcp -noreset -extension GLX \
    >/tmp/xvfb.log 2>&1 &

# Wait for the display (readiness with a timeout, not a fixed sleep).
up=0
for _ in $(seq 1 1200); do
    if xdpyinfo >/dev/null 2>&1; then up=1; break; fi
    sleep 0.05
done
[ "$up" = 1 ] || { echo "entrypoint: Xvfb on $DISPLAY did not come up in 60s" >&2; cat /tmp/xvfb.log >&2; exit 1; }

mkdir -p "${XDG_RUNTIME_DIR:-/run/user/1000}" 2>/dev/null || true
# The session bus listens on /run/user/1000/bus too (OSWorld's tasks export that address).
exec dbus-run-session --config-file=/etc/holo-session-bus.conf -- bash -c '
    dbus-update-activation-environment DISPLAY >/dev/null 2>&1 &
    /usr/libexec/at-spi-bus-launcher --launch-immediately >/tmp/at-spi.log 2>&1 &
    # start openbox until it owns the screen (it can fail on a display that just came up)
    for _try in 1 2 3 4 5; do
        openbox >>/tmp/openbox.log 2>&1 &
        for _i in $(seq 50); do
            xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q "window id" && break 2
            sleep 0.1
        done
    done
    # pyautogui types "<" as shift+keycode 94 (pc105, first to carry `less`) = ">": remap it
    xmodmap -e "keycode 94 = comma less comma less" 2>/dev/null || echo "xmodmap failed" >&2
    exec python -m computer_env.desktop.server --host 0.0.0.0 --port "${SERVER_PORT}" "$@"
' server "$@"
