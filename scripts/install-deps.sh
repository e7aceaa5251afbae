#!/usr/bin/env bash
# Installs what shotd needs from Debian: Chromium, ffmpeg, fonts, and uBlock Origin's copies of
# EasyList and EasyPrivacy. Idempotent: does nothing when everything is installed. apt downloads
# can fail once on a fresh machine, so every apt step is retried.
set -euo pipefail

PACKAGES=(chromium ffmpeg fonts-noto-color-emoji fonts-noto-cjk fonts-liberation webext-ublock-origin-chromium ca-certificates)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo; missing: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi

retry() {
  local n=1
  until "$@"; do
    if [ $n -ge 4 ]; then
      echo "install-deps: '$*' failed $n times" >&2
      return 1
    fi
    echo "install-deps: '$*' failed; retrying in $((n * 5))s" >&2
    sleep $((n * 5))
    n=$((n + 1))
  done
}

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
retry $SUDO apt-get update -qq
retry $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
command -v chromium >/dev/null && command -v ffmpeg >/dev/null
echo "install-deps: done ($(chromium --version 2>/dev/null | head -n1))"
