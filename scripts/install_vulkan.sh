#!/usr/bin/env bash
# Install a Vulkan driver that can render ManiSkill3's cameras, where none is installed.
#
# SAPIEN (ManiSkill3's renderer) draws through Vulkan. On a machine with an NVIDIA driver its
# Vulkan ICD is enough. Without a GPU it needs Mesa's software driver, lavapipe, of a recent
# Mesa: Debian 12's own Mesa 22.3 finds no rendering device for SAPIEN, and Mesa 25 from
# bookworm-backports renders correctly. So on Debian 12 this adds the backports archive
# (of the same mirror as the machine's other Debian sources) and installs Mesa's Vulkan
# drivers from it; on other Debian and Ubuntu releases it installs their own.
#
# Safe to run many times: it does nothing when a usable driver is installed. Without root (or
# sudo) or apt it says so in one line and exits 0, so the commands that call it go on: state
# observations need no Vulkan, and camera tests then skip saying why.
set -euo pipefail

log() { echo "install_vulkan: $*" >&2; }

PACKAGES=(mesa-vulkan-drivers libvulkan1 libdrm2 libdrm-amdgpu1)
MIN_MESA_MAJOR=23  # Debian 12's 22.3 fails; 25 is measured to work

has_nvidia_icd() {
    ls /usr/share/vulkan/icd.d/nvidia_icd*.json /etc/vulkan/icd.d/nvidia_icd*.json >/dev/null 2>&1
}

installed_version() {
    dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null | awk '$3 == "installed" {print $4}' || true
}

mesa_recent_enough() {
    local version
    version="$(installed_version mesa-vulkan-drivers)"
    [ -n "$version" ] && [ -n "$(installed_version libvulkan1)" ] || return 1
    [ "${version%%.*}" -ge "$MIN_MESA_MAJOR" ] 2>/dev/null
}

if has_nvidia_icd || mesa_recent_enough; then
    exit 0
fi

# shellcheck source=scripts/apt_access.sh
. "$(dirname "$0")/apt_access.sh"
use_apt_or_stop "install Mesa >= $MIN_MESA_MAJOR's Vulkan driver (lavapipe) yourself for camera observations; --env.obs_type=state needs none"

# shellcheck disable=SC1091
. /etc/os-release
apt_flags=()
if [ "${ID:-}" = debian ] && [ "${VERSION_CODENAME:-}" = bookworm ]; then
    sources=/etc/apt/sources.list.d/lerobot-bookworm-backports.sources
    if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
        # The first Debian archive of the machine's own sources (a mirror), in either format
        # (one-line .list or deb822 .sources): a URI whose path ends in /debian, so that a
        # debian-security line listed first is not taken for it.
        mirror="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
            | grep -E '^[[:space:]]*(URIs:|deb )' | grep -oE 'https?://[^[:space:]]+' | grep -E '/debian/?$' | head -n1 || true)"
        mirror="${mirror:-http://deb.debian.org/debian}"
        log "adding bookworm-backports from ${mirror} (Mesa 25's lavapipe)"
        printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
            "${mirror%/}" | "${SUDO[@]}" tee "$sources" >/dev/null
    fi
    apt_flags=(-t bookworm-backports)
fi

log "apt-get install ${apt_flags[*]} ${PACKAGES[*]}"
"${SUDO[@]}" apt-get update -qq
# Through `env`: sudo drops variables set in front of it, and DEBIAN_FRONTEND must reach apt-get.
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_flags[@]}" "${PACKAGES[@]}" >/dev/null
if ! mesa_recent_enough; then
    log "installed mesa-vulkan-drivers $(installed_version mesa-vulkan-drivers), older than $MIN_MESA_MAJOR: ManiSkill's cameras may find no rendering device"
fi
