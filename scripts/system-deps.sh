#!/usr/bin/env bash
# Install the Debian/Ubuntu packages Imprint needs. Already-installed packages are skipped, so a
# second run costs nothing. Usage: scripts/system-deps.sh [run|test] [--list]
#   run     what the app needs: Qt's X11 libraries, and a compiler for llama.cpp
#   test    also every program the tests start: Xvfb, xdotool, a D-Bus session bus, gnome-keyring
#           (a real Secret Service), NSIS and Wine (the installer run under Wine), mount (a small
#           tmpfs for the full-disk tests), desktop-file-validate, tesseract (OCR of scans)
#   --list  print the packages, one a line, and install nothing
# tests/unit/test_system_deps.py checks that every program the tests, scripts and packaging run
# comes from a package of the `test` list.
set -euo pipefail

purpose=${1:-run}
packages=(
    python3-venv build-essential cmake
    libegl1 libgl1 libfontconfig1 libdbus-1-3 libxkbcommon0 libxkbcommon-x11-0
    libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-randr0
    libxcb-render-util0 libxcb-image0 libxcb-xinerama0 libxcb-xkb1 fonts-dejavu-core
)
if [[ $purpose == test ]]; then
    packages+=(
        xvfb xauth xdotool dbus dbus-x11 gnome-keyring nsis desktop-file-utils mount wine64
        tesseract-ocr tesseract-ocr-eng
        # What the Debian package Depends on (packaging/debian.py), which `make package` installs
        # with dpkg -i: dpkg installs no dependency itself.
        libxcb1 libdrm2 libwayland-client0 libwayland-cursor0 libwayland-egl1 fontconfig-config
    )
fi
if [[ ${2:-} == --list ]]; then
    printf '%s\n' "${packages[@]}"
    exit 0
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
