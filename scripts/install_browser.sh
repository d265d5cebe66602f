#!/usr/bin/env bash
# Install a headless browser for the report pages' browser test, where none is installed.
#
# tests/evaluation/report/test_browser.py opens report.html, comparison.html and
# training_curve.html in a real browser (console errors, charts drawn). It uses Debian's
# `chromium` and falls back to `firefox-esr`; this installs the first one apt can install.
#
# Safe to run many times: it does nothing when a browser is installed. Without root (or sudo)
# or apt it says so in one line and exits 0, so the commands that call it go on: the browser
# test then skips, saying why.
set -euo pipefail

log() { echo "install_browser: $*" >&2; }

for browser in chromium chromium-browser google-chrome firefox-esr firefox; do
    if command -v "$browser" >/dev/null 2>&1; then
        exit 0
    fi
done

# shellcheck source=scripts/apt_access.sh
. "$(dirname "$0")/apt_access.sh"
use_apt_or_stop "install chromium or firefox-esr yourself; the report pages' browser test is skipped"

"${SUDO[@]}" apt-get update -qq
for package in chromium firefox-esr; do
    log "apt-get install $package"
    # Through `env`: sudo drops variables set in front of it, and DEBIAN_FRONTEND must reach apt-get.
    if "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null; then
        exit 0
    fi
done
log "neither chromium nor firefox-esr could be installed; the report pages' browser test is skipped"
