#!/usr/bin/env bash
# Builds the Debian package of shotd from a built binary, with dpkg-deb (no other tool): an
# air-gapped host installs it with apt, which pulls Chromium's headless shell, ffmpeg, heif-enc, the fonts
# and the filter lists from its Debian mirror; autoconsent, which Debian does not ship, is inside.
#
#   scripts/build-deb.sh BIN VERSION OUTDIR
#
# BIN is the shotd binary (make build), VERSION the version it was stamped with (git describe),
# OUTDIR where shotd_<version>_<arch>.deb is written; the path is printed. AUTOCONSENT_DIR (default
# where scripts/install-deps.sh installs it) holds autoconsent.standalone.js and its LICENSE,
# checked against the hash that install-deps.sh pins.
set -euo pipefail

BIN=${1:?usage: build-deb.sh BIN VERSION OUTDIR}
VERSION=${2:?usage: build-deb.sh BIN VERSION OUTDIR}
OUTDIR=${3:?usage: build-deb.sh BIN VERSION OUTDIR}
REPO=$(cd "$(dirname "$0")/.." && pwd)
AUTOCONSENT_DIR=${AUTOCONSENT_DIR:-/usr/local/share/shotd/autoconsent}
ARCH=${DEB_ARCH:-$(dpkg --print-architecture 2>/dev/null || go env GOARCH)}
MAINTAINER=${DEB_MAINTAINER:-shotd maintainers <shotd@users.noreply.github.com>}

command -v dpkg-deb >/dev/null || { echo "build-deb: dpkg-deb is missing (Debian package dpkg)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "build-deb: $BIN is not an executable (make build)" >&2; exit 1; }

# A Debian version: digits first, only [A-Za-z0-9.+~]. git describe gives v1.2.0, v1.2.0-3-gabc,
# abc1234 or abc1234-dirty: 1.2.0, 1.2.0+3.gabc, 0~gitabc1234, 0~gitabc1234+dirty.
debver=${VERSION#v}
[[ $debver =~ ^[0-9] ]] || debver="0~git$debver"
debver=$(printf '%s' "$debver" | sed -e 's/-/+/' -e 's/-/./g' -e 's/[^A-Za-z0-9.+~]/./g')

# autoconsent: the file install-deps.sh verified, verified again here.
sha=$(sed -n 's/^AUTOCONSENT_SCRIPT_SHA256=//p' "$REPO/scripts/install-deps.sh")
acver=$(sed -n 's/^AUTOCONSENT_VERSION=//p' "$REPO/scripts/install-deps.sh")
if ! echo "$sha  $AUTOCONSENT_DIR/autoconsent.standalone.js" | sha256sum -c --status 2>/dev/null || [ ! -f "$AUTOCONSENT_DIR/LICENSE" ]; then
  echo "build-deb: $AUTOCONSENT_DIR has no autoconsent $acver (sha256 $sha): run make deps first" >&2
  exit 1
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/root
umask 022
install -D -m 0755 "$BIN" "$root/usr/bin/shotd"
install -d -m 0755 "$root/usr/lib/systemd/system" "$root/etc/shotd" "$root/usr/share/doc/shotd" "$root/usr/share/shotd/autoconsent"
sed -e 's|@BINDIR@|/usr/bin|g' -e 's|@SYSCONFDIR@|/etc|g' -e 's|@DOCDIR@|/usr/share/doc/shotd|g' \
  "$REPO/packaging/shotd.service.in" > "$root/usr/lib/systemd/system/shotd.service"
chmod 0644 "$root/usr/lib/systemd/system/shotd.service"
# The config may hold secrets: 0640, group shotd (set by postinst, which makes the group).
sed -e 's|^data_dir *= *"[^"]*"|data_dir     = "/var/lib/shotd"|' \
  -e 's|^autoconsent *= *"[^"]*"|autoconsent = "/usr/share/shotd/autoconsent/autoconsent.standalone.js"|' \
  "$REPO/config/example.toml" > "$root/etc/shotd/shotd.toml"
chmod 0640 "$root/etc/shotd/shotd.toml"
grep -q '^autoconsent = "/usr/share/shotd/' "$root/etc/shotd/shotd.toml" || { echo "build-deb: the autoconsent line of config/example.toml was not rewritten" >&2; exit 1; }
install -m 0644 "$AUTOCONSENT_DIR/autoconsent.standalone.js" "$AUTOCONSENT_DIR/LICENSE" "$root/usr/share/shotd/autoconsent/"
install -m 0644 "$REPO/README.md" "$REPO/THIRD_PARTY_NOTICES.md" "$root/usr/share/doc/shotd/"
install -d -m 0755 "$root/usr/share/doc/shotd/docs"
install -m 0644 "$REPO"/docs/*.md "$REPO"/docs/*.png "$root/usr/share/doc/shotd/docs/"

cat > "$root/usr/share/doc/shotd/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: shotd
Comment: The Go modules linked into /usr/bin/shotd are listed with their licences in
 THIRD_PARTY_NOTICES.md and go.mod of the source.

Files: *
Copyright: 2025-2026 The shotd authors
License: Apache-2.0
 On Debian systems the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0.

Files: usr/share/shotd/autoconsent/*
Copyright: 2021-2026 DuckDuckGo, Inc.
Comment: @duckduckgo/autoconsent $acver from the npm registry, dist/autoconsent.standalone.js.
License: MPL-2.0
 On Debian systems the full text of the Mozilla Public License 2.0 is in
 /usr/share/common-licenses/MPL-2.0.
EOF
chmod 0644 "$root/usr/share/doc/shotd/copyright"
printf 'shotd (%s) unstable; urgency=medium\n\n  * Built from the shotd source at %s.\n\n -- %s  %s\n' \
  "$debver" "$VERSION" "$MAINTAINER" "$(date -u -R -d "@${SOURCE_DATE_EPOCH:-$(git -C "$REPO" log -1 --format=%ct 2>/dev/null || date +%s)}")" |
  gzip -9n > "$root/usr/share/doc/shotd/changelog.gz"
chmod 0644 "$root/usr/share/doc/shotd/changelog.gz"

# What lintian says that is meant: the config is 0640 (it may hold secrets); the manual is the
# README and every command's --help.
install -d -m 0755 "$root/usr/share/lintian/overrides"
# A static PIE Go binary has no libraries to name.
printf '%s\n' 'shotd: non-standard-file-perm 0640 != 0644 [etc/shotd/shotd.toml]' 'shotd: no-manual-page [usr/bin/shotd]' \
  'shotd: shared-library-lacks-prerequisites [usr/bin/shotd]' \
  > "$root/usr/share/lintian/overrides/shotd"
chmod 0644 "$root/usr/share/lintian/overrides/shotd"

install -d -m 0755 "$root/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<EOF
Package: shotd
Version: $debver
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $size
Depends: adduser (>= 3.134), chromium-headless-shell | chromium, ffmpeg, libheif-examples, fonts-liberation, fonts-noto-color-emoji, fonts-noto-cjk, webext-ublock-origin-chromium, ca-certificates
Section: web
Priority: optional
Homepage: https://github.com/shotd/shotd
Description: self-hosted screenshot rendering service
 shotd renders web pages, HTML and Markdown to PNG, JPEG, WebP, PDF and video
 with a pool of headless Chromium processes, behind an HTTP API with accounts,
 keys, quotas, background jobs and webhooks. This package runs it as the
 systemd unit shotd.service with its config in /etc/shotd/shotd.toml and its
 data in /var/lib/shotd; it carries DuckDuckGo's autoconsent for
 block_cookie_banners.
EOF
echo /etc/shotd/shotd.toml > "$root/DEBIAN/conffiles"
for s in postinst prerm postrm; do
  install -m 0755 "$REPO/packaging/deb/$s" "$root/DEBIAN/$s"
done

mkdir -p "$OUTDIR"
out="$OUTDIR/shotd_${debver}_${ARCH}.deb"
# --root-owner-group: every file root:root whoever builds it (no fakeroot needed).
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
echo "$out"
