# shotd: `make run` starts the service on its embedded defaults, `make test` runs the tests.
GO        ?= go
BIN       := bin/shotd
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.Version=$(VERSION)
FUZZTIME  ?= 20s

.PHONY: all build run test test-context test-short lint bench fuzz deps clean chaos soak cluster-test

all: build

deps:
	./scripts/install-deps.sh

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/shotd

run: deps build
	./$(BIN) serve

# The whole suite: real Chromium (the default chromium-headless-shell, tabs wiped between
# renders), real bbolt, real HTTP on loopback; then the suites that render once more the other way.
test: deps
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 25m ./...
	$(MAKE) --no-print-directory test-context

# The suites that render, on full Chromium with a fresh browser context per render
# (browser.isolation = "context"): the other browser and the other isolation. One package at a
# time: full Chromium with a context per render is the heaviest way to run them on 2 cores.
test-context:
	SHOTD_TEST_BROWSER=/usr/lib/chromium/chromium SHOTD_TEST_ISOLATION=context \
	  $(GO) test -p 1 -count=1 -timeout 15m ./cdpclient/ ./actors/ ./httpd/

test-short:
	$(GO) test -short -count=1 ./...

lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(GO) mod tidy -diff

# Service vs a raw and a clean CDP loop on the same Chrome; prints p50, p95, throughput, Chrome CPU
# and the ratios, then the figures beyond the floor (warm start, cache hit, RSS, async accepts).
# BENCH_FLAGS passes flags to it (-rows, e.g. "small:1,2 pdf:1+200ms"; -n, -browser, -chrome-flags,
# -renders, -accepts, -hits).
bench: deps
	$(GO) run ./bench $(BENCH_FLAGS)

# Three shotd processes as one cluster on loopback (internal/clustertest), a node killed with
# SIGKILL mid-load: five runs of the long load (the kill point alternates between 30% of the
# quota and 195 of 200), each printing its figures. make test runs the short load once.
cluster-test: deps build
	@log=$$(mktemp); trap 'rm -f $$log' EXIT; for i in 1 2 3 4 5; do \
	  echo "cluster-test run $$i of 5"; \
	  SHOTD_TEST_CLUSTER_LONG=1 SHOTD_TEST_CLUSTER_RUN=$$i SHOTD_TEST_CLUSTER_BIN=$(abspath $(BIN)) $(GO) test -count=1 -timeout 15m -run TestClusterQuota ./internal/clustertest/ -v >$$log 2>&1; rc=$$?; \
	  grep -E '^(cluster run:|--- |ok|FAIL|\s+(cluster|ledgerdump)_test.go)' $$log; \
	  [ $$rc -eq 0 ] || { cp $$log $(BIN)-cluster-test-failed.log; echo "the failed run's whole log: $(BIN)-cluster-test-failed.log"; exit 1; }; \
	done

# Faults under load against the real binary on loopback (internal/chaos): kill -9 of a renderer,
# the GPU process, a browser, SIGSTOP of a browser, then of all at once, kill -9 of shotd;
# prints the figures.
# CHAOS_FLAGS passes flags to it (-clients, -settle, -stop, -limit).
chaos: deps build
	$(GO) run ./tools/chaos -bin $(BIN) $(CHAOS_FLAGS)

# Many renders at full concurrency while the service's resources are sampled; fails on growth
# without bound. SOAK_FLAGS passes flags to it (-n, default 5000; -clients; -interval; -limit).
soak: deps build
	$(GO) run ./tools/soak -bin $(BIN) $(SOAK_FLAGS)

fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

clean:
	rm -rf bin dist

# Installs the binary, the systemd unit, /etc/shotd/shotd.toml (only when absent: an operator's
# edits survive a reinstall) and the docs. DESTDIR stages the tree for a package. Chromium, ffmpeg
# and fonts come from `make deps`, not from here.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system
DOCDIR     ?= $(PREFIX)/share/doc/shotd
STATEDIR   ?= /var/lib/shotd

.PHONY: install uninstall openapi-client deb

# The Debian package, from the built binary with dpkg-deb: dist/shotd_<version>_<arch>.deb. It
# carries autoconsent (from `make deps`) and depends on Chromium's headless shell, ffmpeg, the fonts
# and the filter lists, so an air-gapped host installs it from its Debian mirror (docs/operations.md).
# Its binary is static (no libc to depend on), position-independent and stripped.
DEBDIR ?= dist
deb:
	CGO_ENABLED=0 $(GO) build -trimpath -buildmode=pie -ldflags "-s -w $(LDFLAGS)" -o bin/shotd-deb ./cmd/shotd
	./scripts/build-deb.sh bin/shotd-deb $(VERSION) $(DEBDIR)

# Generates a Go client from the OpenAPI document with ogen and builds it (Go module proxy).
openapi-client:
	./scripts/openapi-client.sh

install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/shotd
	install -d -m 0755 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/shotd $(DESTDIR)$(DOCDIR)
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' \
	  packaging/shotd.service.in > $(DESTDIR)$(UNITDIR)/shotd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/shotd.service
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/shotd/shotd.toml ]; then \
	  echo "install: keeping $(DESTDIR)$(SYSCONFDIR)/shotd/shotd.toml"; \
	else \
	  (umask 077; sed -e 's|^data_dir *= *"[^"]*"|data_dir     = "$(STATEDIR)"|' config/example.toml > $(DESTDIR)$(SYSCONFDIR)/shotd/shotd.toml) && \
	  chmod 0640 $(DESTDIR)$(SYSCONFDIR)/shotd/shotd.toml; \
	fi
	@# The config may hold the admin token and the S3 secret: readable by root and by the group
	@# shotd, which the unit gives the service (SupplementaryGroups=). A package creates the group
	@# in its postinst; installing on this machine as root creates it here, with the static user
	@# of the same name: DynamicUser= uses a static user and group it finds, but refuses a static
	@# group whose user is missing.
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then \
	  getent group shotd >/dev/null || groupadd --system shotd; \
	  getent passwd shotd >/dev/null || useradd --system --gid shotd --home-dir $(STATEDIR) \
	    --no-create-home --shell /usr/sbin/nologin --comment "shotd screenshot service" shotd; \
	  chgrp shotd $(SYSCONFDIR)/shotd/shotd.toml; \
	fi
	install -m 0644 README.md LICENSE THIRD_PARTY_NOTICES.md $(DESTDIR)$(DOCDIR)/
	install -d -m 0755 $(DESTDIR)$(DOCDIR)/docs
	install -m 0644 docs/*.md docs/*.png $(DESTDIR)$(DOCDIR)/docs/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/shotd $(DESTDIR)$(UNITDIR)/shotd.service
	rm -rf $(DESTDIR)$(DOCDIR)
	@echo "uninstall: $(SYSCONFDIR)/shotd and $(STATEDIR) are left in place"
