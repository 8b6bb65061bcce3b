#!/bin/sh
# google-chrome as OSWorld's tasks call it: Chromium with Chrome's profile folder.
case " $* " in
    *" --user-data-dir="*) ;;
    *) set -- "--user-data-dir=$HOME/.config/google-chrome" "$@" ;;
esac
# Its first window is titled "Google Chrome" (tasks activate the window by that name; the page
# title is not part of it, Chromium's own title would end in "- Chromium").
case " $* " in
    *" --window-name="*) ;;
    *) set -- "--window-name=Google Chrome" "$@" ;;
esac
export CHROME_WRAPPER=/opt/desktop/bin/google-chrome CHROME_DESKTOP=google-chrome.desktop
export HOLO_CHROME_EXE=__CHROME_LINK__
# Local Network Access checks came after the Chrome of OSWorld's image; with them, Chromium's first
# start writes profile.default_content_setting_values (a migration marker), which a fresh
# Chrome profile there lacks and which OSWorld's data_delete_automacally getter reads as "on".
exec /opt/desktop/bin/chromium --no-first-run \
    --no-default-browser-check --password-store=basic --disable-component-update \
    --disable-features=LocalNetworkAccessChecks "$@"
