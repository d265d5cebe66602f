# Sourced by the install_*.sh scripts: how this machine may run apt-get, or a clean exit.
#
# `use_apt_or_stop "<what goes without>"` sets SUDO to the prefix apt-get needs here (none as
# root, `sudo -n` with password-less sudo). Without apt or the right to use it, it logs one line
# (through the caller's `log`) saying what goes without, and exits 0: the commands that chain
# these scripts go on, and the tests that need the package then skip saying why.

use_apt_or_stop() {
    local consequence="$1"
    if ! command -v apt-get >/dev/null 2>&1; then
        log "no apt-get here: $consequence"
        exit 0
    fi
    SUDO=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            SUDO=(sudo -n)
        else
            log "not root and no password-less sudo: $consequence"
            exit 0
        fi
    fi
}
