#!/usr/bin/env bash
# Install the Debian/Ubuntu packages Imprint needs. Already-installed packages are skipped, so a
# second run costs nothing. Usage: scripts/system-deps.sh [run|test]
#   run   what the app needs: Qt's X11 libraries, and a compiler for llama.cpp
#   test  also Xvfb, a D-Bus session bus, gnome-keyring (a real Secret Service) and NSIS
set -euo pipefail

purpose=${1:-run}
packages=(
    python3-venv build-essential cmake
    libegl1 libgl1 libfontconfig1 libdbus-1-3 libxkbcommon0 libxkbcommon-x11-0
    libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-randr0
    libxcb-render-util0 libxcb-image0 libxcb-xinerama0 libxcb-xkb1 fonts-dejavu-core
)
if [[ $purpose == test ]]; then
    packages+=(xvfb xauth xdotool dbus dbus-x11 gnome-keyring nsis desktop-file-utils)
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "No apt-get here: install the equivalents of these packages yourself:" >&2
    echo "  ${packages[*]}" >&2
    exit 0
fi

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
    sudo=(sudo)
fi
echo "Installing system packages: ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
