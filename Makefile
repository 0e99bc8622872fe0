# Akira: make build | make test | make bench | make demo
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

.PHONY: build test test-deploy generate vet fmt-check bench bench-go fuzz lint clean demo

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/akira ./cmd/akira

# The test command of the README: formatting, vet, and every test with the race detector.
# Tests that need Redis use AKIRA_TEST_REDIS (host:port), else 127.0.0.1:6379 when it answers, else an
# embedded Redis-compatible server (internal/redistest); CI sets AKIRA_TEST_REDIS_REQUIRED=1 to insist on a real one.
test: fmt-check vet
	$(GO) test -race -count=1 ./...

# The deployment files, checked in a module of their own (deploy/test) so that Akira does not depend
# on Kubernetes libraries: the chart rendered with Helm's SDK and decoded strictly into the API types,
# the compose file through compose-go, the Dockerfile through BuildKit's parser.
test-deploy:
	cd deploy/test && $(GO) vet ./... && $(GO) test -count=1 ./...

# Regenerates the files derived from one source (deploy/github-app-manifest.json).
generate:
	$(GO) generate ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change these files (run gofmt -w):"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# One table: each figure next to its floor measured in the same run (BENCH_QUICK=1: a one-minute run
# on small inputs that keeps the harness working). bench-go runs every Go benchmark as they are.
bench:
	$(GO) run ./internal/benchtable

bench-go:
	$(GO) test -run='^$$' -bench=. -benchtime=20x ./...

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=$${FUZZTIME:-60s} ./runner/roadmap/

lint:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@2025.1.1 ./...

clean:
	rm -rf bin

# The README's first command: Akira's main job end to end on a throwaway repository.
demo: build
	@scripts/demo.sh
