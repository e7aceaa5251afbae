#!/usr/bin/env bash
# Installs what shotd needs: from Debian, Chromium (and its headless shell, the faster choice of
# browser.path), ffmpeg, heif-enc (libheif-examples, for format=heif), fonts, curl and uBlock Origin's copies
# of EasyList and EasyPrivacy; from the npm registry, DuckDuckGo's autoconsent (MPL-2.0), whose
# standalone script answers cookie-consent dialogs for block_cookie_banners. Idempotent: does
# nothing when everything is installed. Downloads can fail once on a fresh machine, so every
# download is retried.
set -euo pipefail

PACKAGES=(chromium chromium-headless-shell ffmpeg libheif-examples fonts-noto-color-emoji fonts-noto-cjk fonts-liberation webext-ublock-origin-chromium ca-certificates curl)

# autoconsent is pinned: the tarball must match the registry's dist.integrity (sha512) of this
# version, and the installed script the sha256 of the file inside it, so a re-run is a no-op and a
# changed or damaged file is replaced. Only the standalone script and the licence are installed.
AUTOCONSENT_VERSION=16.23.0
AUTOCONSENT_URL="https://registry.npmjs.org/@duckduckgo/autoconsent/-/autoconsent-${AUTOCONSENT_VERSION}.tgz"
AUTOCONSENT_INTEGRITY="sha512-NTmDhASFf5pUsSwg2TyT9R75GYUcuYZXPyBnRcYgJgozg6RLeXXP9uH8ADxA364yQ2gJBMu83AN/D24Y4nkPKg=="
AUTOCONSENT_SCRIPT_SHA256=4abcd03523a52e015317baee2ba06460bc2e55989304f035b637ed4480840e22
AUTOCONSENT_DIR=/usr/local/share/shotd/autoconsent

SUDO=""
need_root() {
  if [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; then
    command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo ($1)" >&2; exit 1; }
    SUDO="sudo"
  fi
}

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

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  need_root "missing: ${missing[*]}"
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  retry $SUDO apt-get update -qq
  retry $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  for bin in chromium ffmpeg; do
    command -v "$bin" >/dev/null || { echo "install-deps: $bin is still missing after apt" >&2; exit 1; }
  done
  echo "install-deps: done ($(chromium --version 2>/dev/null | head -n1))"
fi

installed_ok() {
  [ -f "$AUTOCONSENT_DIR/LICENSE" ] &&
    echo "$AUTOCONSENT_SCRIPT_SHA256  $AUTOCONSENT_DIR/autoconsent.standalone.js" | sha256sum -c --status 2>/dev/null
}

if ! installed_ok; then
  need_root "install to $AUTOCONSENT_DIR"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "install-deps: fetching autoconsent $AUTOCONSENT_VERSION from the npm registry"
  retry curl -fsSL --connect-timeout 20 --max-time 300 -o "$tmp/autoconsent.tgz" "$AUTOCONSENT_URL"
  got="sha512-$(openssl dgst -sha512 -binary "$tmp/autoconsent.tgz" | base64 -w0)"
  if [ "$got" != "$AUTOCONSENT_INTEGRITY" ]; then
    echo "install-deps: autoconsent tarball integrity mismatch: got $got, want $AUTOCONSENT_INTEGRITY" >&2
    exit 1
  fi
  tar -xzf "$tmp/autoconsent.tgz" -C "$tmp" package/dist/autoconsent.standalone.js package/LICENSE
  echo "$AUTOCONSENT_SCRIPT_SHA256  $tmp/package/dist/autoconsent.standalone.js" | sha256sum -c --status
  $SUDO install -D -m 0644 "$tmp/package/dist/autoconsent.standalone.js" "$AUTOCONSENT_DIR/autoconsent.standalone.js"
  $SUDO install -D -m 0644 "$tmp/package/LICENSE" "$AUTOCONSENT_DIR/LICENSE"
  installed_ok
  echo "install-deps: autoconsent $AUTOCONSENT_VERSION installed in $AUTOCONSENT_DIR"
fi

# ScreenshotOne's Node SDK, pinned in tools/s1sdk (package-lock.json), for
# TestScreenshotOneNodeSDK, which runs it against shotd on loopback. Only where node and npm are
# there: without node the test skips and says so. npm ci verifies every package against the lock
# file's integrity hashes; it runs again only when the lock file changed since the last install.
S1SDK_DIR="$(cd "$(dirname "$0")/.." && pwd)/tools/s1sdk"
if command -v node >/dev/null && command -v npm >/dev/null; then
  stamp="$S1SDK_DIR/node_modules/.package-lock.json"
  if [ ! -f "$stamp" ] || [ "$S1SDK_DIR/package-lock.json" -nt "$stamp" ]; then
    echo "install-deps: installing ScreenshotOne's Node SDK in $S1SDK_DIR (npm ci)"
    (cd "$S1SDK_DIR" && retry npm ci --no-audit --no-fund --loglevel=error)
  fi
else
  echo "install-deps: node or npm missing; TestScreenshotOneNodeSDK will be skipped" >&2
fi
