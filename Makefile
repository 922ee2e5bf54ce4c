# frog: `make help` lists the targets.
GO      ?= go
BIN     := bin/frog
# grpcnotrace drops gRPC's golang.org/x/net/trace (remote runs' transport),
# whose html/template would make the linker keep every exported method of
# every type (cmd/frog's TestLinkerDropsUnusedMethods). Exported, so that
# the go commands tests run build frog the same way.
GOFLAGS ?= -tags=grpcnotrace
export GOFLAGS
PROTOC_GEN_GO := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12

.DEFAULT_GOAL := help
.PHONY: help deps build test proto proto-check bench bench-synth gremlins run synth check image gpu-check gpu-check-build clean

GREMLINS_VERSION := v0.6.0
TASKS            ?= runs/tasks.jsonl
TRAIN_TASKS      ?= runs/train-tasks.jsonl
TRAIN_N          ?= 120
# SANDBOX: auto (docker when a daemon answers, else process), docker or
# process. Process sandboxes are weaker in isolation; docs/training.md has
# what each measured in make run.
SANDBOX          ?= auto
# make run trains from scratch (a nearly uniform ranker) so that the report
# shows the climb; the prior baseline draws the hand prior's level on the
# held-out curve (one more evaluation of the --heldout-n tasks at the start).
TRAIN_FLAGS      ?= --start scratch --episodes 1600 --heldout-n 40 --eval-every 5 --baselines fl-feedback,fl-greedy,prior --sandbox $(SANDBOX)

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# need,CMD,PACKAGE,WHY: CMD is on PATH, or Debian's PACKAGE is installed now
# (as root, with apt-get), or make stops with one line that says what to do.
define need
command -v $(1) >/dev/null 2>&1 || { \
	if [ "$$(id -u)" != 0 ]; then echo "make: $(1) is missing ($(3)) and only root can install it here: run 'sudo apt-get install $(2)' (or install $(2) another way), then rerun"; exit 1; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then echo "make: $(1) is missing ($(3)) and there is no apt-get here: install $(2), then rerun"; exit 1; fi; \
	echo "make: installing $(2) ($(3)) with apt-get"; \
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null; } \
		|| { echo "make: apt-get install $(2) failed: install it, then rerun"; exit 1; }; }
endef

deps: ## check what the tests and `make run` need (go, git, gcc, bubblewrap, a Docker daemon) and install what is missing (as root, with apt-get)
	@command -v $(GO) >/dev/null 2>&1 || { echo "make: no go command: install Go 1.26 and put its bin directory on PATH, then rerun"; exit 1; }
	@$(call need,git,git,tests and git sources of frog synth clone with it)
	@$(call need,gcc,gcc libc6-dev,go test -race and the cgo build of cuda need a C compiler)
	@$(call need,bwrap,bubblewrap,process sandboxes contain the code they test with it)
	@$(call need,setpriv,util-linux,process sandboxes run root's commands as nobody with it)
	@if ! command -v docker >/dev/null 2>&1; then echo "make: no docker command: Docker tests use the daemon's socket if one answers, and skip (fail under CI=true) if none does"; \
	elif ! docker info >/dev/null 2>&1; then echo "make: no Docker daemon answers: Docker tests will skip (fail under CI=true); start dockerd to run them"; fi

build: ## build bin/frog
	$(GO) build $(GOFLAGS) -o $(BIN) ./cmd/frog

image: build ## build the sandbox image frog-sandbox:<version> (no registry and no host package needed)
	@if docker info >/dev/null 2>&1; then ./$(BIN) image build; \
	else echo "make image: no Docker daemon answers; the sandbox image was not built (Docker tests skip unless CI=true)"; fi

test: deps image ## run every test with the race detector (Docker tests use the real daemon)
	$(GO) test $(GOFLAGS) -race -count=1 -timeout 30m ./...

check: proto-check ## gofmt, go vet, the wire schema's generated code, and builds with cgo on and off
	@out=$$(gofmt -l $$($(GO) list -f '{{.Dir}}' ./...)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=1 $(GO) build ./...

proto: ## regenerate actors/wire's Go code from its .proto files (Debian's protoc, the pinned protoc-gen-go)
	@$(call need,protoc,protobuf-compiler,the wire schema of remote workers is compiled with it)
	GOBIN=$(CURDIR)/.bin $(GO) install $(PROTOC_GEN_GO)
	PATH=$(CURDIR)/.bin:$$PATH $(GO) generate ./actors/wire

proto-check: ## fail when actors/wire's committed Go code is not what its .proto files generate
	@$(call need,protoc,protobuf-compiler,the wire schema of remote workers is compiled with it)
	@GOBIN=$(CURDIR)/.bin $(GO) install $(PROTOC_GEN_GO)
	@tmp=$$(mktemp -d) && cp actors/wire/*.proto $$tmp && (cd $$tmp && PATH=$(CURDIR)/.bin:$$PATH protoc --proto_path=. --go_out=. --go_opt=paths=source_relative join.proto frog.proto) && \
	for f in join.pb.go frog.pb.go; do cmp -s $$tmp/$$f actors/wire/$$f || { echo "actors/wire/$$f is not what its .proto generates: run make proto"; rm -rf $$tmp; exit 1; }; done; rm -rf $$tmp

run: deps build ## the main job: train the neural repair policy from scratch by GRPO on tasks synthesized (once) from the pinned modules, evaluated on tasks/heldout.jsonl against the hand baselines and the hand prior; then the report
	@mkdir -p runs
	@if [ -s $(TRAIN_TASKS) ]; then echo "make run: reusing $(TRAIN_TASKS) (delete it to synthesize again)"; \
	else ./$(BIN) synth --n $(TRAIN_N) --out $(TRAIN_TASKS); fi
	@name=train-$$(date -u +%Y%m%d-%H%M%S); \
	./$(BIN) train --tasks $(TRAIN_TASKS) --name $$name $(TRAIN_FLAGS) && \
	./$(BIN) report runs/$$name && \
	echo "make run: the run is in runs/$$name (report.png, report.svg, metrics.jsonl, checkpoints/)"

synth: build ## synthesize 1,500 validated tasks from the pinned modules into $(TASKS)
	@mkdir -p $(dir $(TASKS))
	./$(BIN) synth --n 1500 --out $(TASKS)

bench: build ## the scheduler benchmark (actors against plain goroutines) and Go benchmarks
	./$(BIN) bench
	$(GO) test -run '^$$' -bench . -benchtime 200000x ./actors/

gremlins: ## install the pinned gremlins (mutation tester, for bench-synth) into bin/
	GOBIN=$(CURDIR)/bin $(GO) install github.com/go-gremlins/gremlins/cmd/gremlins@$(GREMLINS_VERSION)

bench-synth: build gremlins ## mutants validated per second: frog against gremlins on one package
	./$(BIN) bench synth --gremlins $(CURDIR)/bin/gremlins

gpu-check: ## build bin/cuda.test; if an NVIDIA GPU is here, run the report (libraries, tests, max errors, skips, benchmarks)
	bash cuda/gpucheck.sh

gpu-check-build: ## build bin/cuda.test only (carry bin/ to a GPU machine, run cuda/gpucheck.sh run)
	bash cuda/gpucheck.sh build

clean: ## remove build outputs
	rm -rf bin
