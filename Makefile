# shotd: `make run` starts the service on its embedded defaults, `make test` runs the tests.
GO        ?= go
BIN       := bin/shotd
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.Version=$(VERSION)
FUZZTIME  ?= 20s

.PHONY: all build run test test-short lint bench fuzz deps clean

all: build

deps:
	./scripts/install-deps.sh

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/shotd

run: deps build
	./$(BIN) serve

# The whole suite: real Chromium, real bbolt, real HTTP on loopback.
test: deps
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 25m ./...

test-short:
	$(GO) test -short -count=1 ./...

lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; exit 1; }
	$(GO) vet ./...

# Service vs a raw CDP loop on the same Chrome; prints p50, p95, throughput and the ratio.
bench: deps
	$(GO) run ./bench

fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

clean:
	rm -rf bin
