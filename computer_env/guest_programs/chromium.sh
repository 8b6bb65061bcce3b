#!/bin/sh
# Chromium for the sandboxed desktop (see computer_env/desktop/providers/guest/guest_chrome.py).
CHROMIUM_FLAGS=""
for file in /etc/chromium.d/*; do
    case "$file" in */README|*.dpkg*) ;; *) . "$file" ;; esac
done
export CHROME_WRAPPER="${CHROME_WRAPPER:-/opt/desktop/bin/chromium}"
export CHROME_DESKTOP="${CHROME_DESKTOP:-chromium.desktop}"
exe="${HOLO_CHROME_EXE:-__CHROMIUM_BINARY__}"
[ -x "$exe" ] || exe=__CHROMIUM_BINARY__
# --no-sandbox: nested user namespaces are disabled in the desktop; --test-type: no warning bar
exec "$exe" --no-sandbox --test-type $CHROMIUM_FLAGS "$@"
