# Akira: make build | make install | make test | make bench | make demo | make demo-app
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

.PHONY: build install test test-deploy test-agents generate vet fmt-check bench bench-go fuzz lint clean demo demo-app

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/akira ./cmd/akira

# Puts akira on your PATH: go install writes it to $(go env GOBIN), else $(go env GOPATH)/bin.
install:
	$(GO) install -trimpath -ldflags "$(LDFLAGS)" ./cmd/akira
	@bin=$$($(GO) env GOBIN); bin=$${bin:-$$($(GO) env GOPATH)/bin}; \
	echo "installed $$bin/akira"; \
	sh scripts/path-hint.sh "$$bin"

# The test command of the README: formatting, vet, and every test with the race detector (about ten
# minutes on two cores). Tests get Redis from internal/redistest: the server AKIRA_TEST_REDIS
# (host:port) names, else a throwaway redis-server per test binary, else an embedded Redis-compatible
# server; a Redis of your own is never touched unless AKIRA_TEST_REDIS names it. CI sets
# AKIRA_TEST_REDIS_REQUIRED=1 to insist on a real one. At the end, whether the tests pass or not,
# scripts/test-notes.sh prints which Redis each package used and each group of tests skipped for want
# of a tool (Chromium, bubblewrap, redis-server), with what to install.
test: fmt-check vet
	@notes=$$(mktemp); \
	AKIRA_TEST_NOTES=$$notes $(GO) test -race -count=1 -timeout 25m ./...; status=$$?; \
	scripts/test-notes.sh "$$notes"; rm -f "$$notes"; exit $$status

# The deployment files, checked in a module of their own (deploy/test) so that Akira does not depend
# on Kubernetes libraries: the chart rendered with Helm's SDK and decoded strictly into the API types,
# the compose file through compose-go, the Dockerfile through BuildKit's parser.
test-deploy:
	cd deploy/test && $(GO) vet ./... && $(GO) test -count=1 ./...

# The real coding-agent CLIs, at the versions the deploy image pins (deploy/Dockerfile), installed
# from npm into a cache and driven through akira run, the sandbox and the egress proxy against
# scripted model servers (cmd/akira TestRealAgents*), with the profiles of deploy/akira.yaml as they
# ship: each call must ask for the profile's model and cost the server's tokens at Akira's price.
AGENTS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/akira/agents
CLAUDE_CODE_VERSION := $(shell sed -n 's/^ARG CLAUDE_CODE_VERSION=//p' deploy/Dockerfile)
CODEX_VERSION := $(shell sed -n 's/^ARG CODEX_VERSION=//p' deploy/Dockerfile)
test-agents:
	@mkdir -p $(AGENTS_CACHE)
	@if [ "$$(cat $(AGENTS_CACHE)/.versions 2>/dev/null)" != "$(CLAUDE_CODE_VERSION) $(CODEX_VERSION)" ]; then \
	  npm install --prefix $(AGENTS_CACHE) --no-fund --no-audit --no-save \
	    @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) @openai/codex@$(CODEX_VERSION) && \
	  (cd $(AGENTS_CACHE)/node_modules/@anthropic-ai/claude-code && node install.cjs) && \
	  echo "$(CLAUDE_CODE_VERSION) $(CODEX_VERSION)" > $(AGENTS_CACHE)/.versions; fi
	AKIRA_TEST_AGENTS_DIR=$(AGENTS_CACHE) AKIRA_TEST_AGENTS_REQUIRED=1 $(GO) test -count=1 -run 'TestRealAgents' ./cmd/akira/

# Regenerates the files derived from one source (deploy/github-app-manifest.json).
generate:
	$(GO) generate ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change these files (run gofmt -w):"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	$(GO) vet -tags demoapp ./cmd/akira/

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

# The GitHub App without GitHub: akira serve's own wiring against the fake GitHub (internal/githubtest)
# and an embedded Redis, one issue from /akira run to the pull request marked ready. Built with the
# demoapp tag, so the akira binary people deploy carries no fake GitHub. On a terminal it keeps
# serving the dashboard until Ctrl-C; elsewhere (CI) it ends with the run.
demo-app:
	$(GO) run -tags demoapp ./cmd/akira demo-app
