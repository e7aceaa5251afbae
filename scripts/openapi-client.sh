#!/usr/bin/env bash
# Shows that /openapi.json generates a Go client that compiles: prints the document with
# `shotd openapi`, generates a client with ogen (pinned; fetched through the Go module proxy) in a
# throwaway module, then builds and vets it. Slow (a few minutes on a cold module cache), so it is
# not part of `make test`; run it after changing the option table, the error catalogue or
# httpd/openapi.go. Usage: scripts/openapi-client.sh [KEEP_DIR]
set -euo pipefail

OGEN_VERSION=v1.24.0
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$(mktemp -d)}
[ $# -ge 1 ] || trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir"

go build -o "$dir/shotd" "$root/cmd/shotd"
"$dir/shotd" openapi > "$dir/openapi.json"
cd "$dir"
cat > go.mod <<MOD
module example.test/shotdclient

go 1.26
MOD
go run "github.com/ogen-go/ogen/cmd/ogen@$OGEN_VERSION" --target client --package client --clean openapi.json 2> ogen.log ||
  { cat ogen.log >&2; exit 1; }
go mod tidy
go build ./...
go vet ./...
echo "openapi-client: ogen $OGEN_VERSION generated $(ls client | wc -l) files in $dir/client; they build and vet"
