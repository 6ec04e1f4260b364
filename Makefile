# Agora — the two commands a newcomer needs are `make run` and `make test`.
GO        ?= go
BIN       := bin/agora
DATA      ?= $(CURDIR)/.agora-data
PKGS      := ./...
TESTFLAGS ?= -race -timeout 50m
# What `agora version` prints (node/buildinfo), stamped by the linker.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo +modified)
BUILDTIME := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS   := -X github.com/agora-sched/agora/node/buildinfo.Version=$(VERSION) \
             -X github.com/agora-sched/agora/node/buildinfo.Commit=$(COMMIT) \
             -X github.com/agora-sched/agora/node/buildinfo.BuildTime=$(BUILDTIME)

.PHONY: all build release run test testdeps vet fmt soak bench bench-data bench-swf-full bench-all proto clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/agora

# Release binaries in $(DIST): linux/amd64 and linux/arm64, each with the
# version stamped in, with NVML (cgo) where a C compiler for the target
# exists, else without (CGO_ENABLED=0: no GPU discovery, declared devices
# still work); SHA256SUMS; the man pages (agora man) and the systemd unit
# (docs/operations.md, "Installing").
DIST ?= dist
release:
	@mkdir -p $(DIST)/man
	@set -e; host=$$($(GO) env GOHOSTARCH); \
	for arch in amd64 arm64; do \
		case $$arch in amd64) cc=x86_64-linux-gnu-gcc;; arm64) cc=aarch64-linux-gnu-gcc;; esac; \
		if [ "$$arch" = "$$host" ] && command -v $${CC:-cc} >/dev/null 2>&1; then cgo=1; cc=$${CC:-cc}; \
		elif command -v $$cc >/dev/null 2>&1; then cgo=1; \
		else cgo=0; fi; \
		echo "make release: linux/$$arch (cgo $$cgo: $$([ $$cgo = 1 ] && echo with || echo without) NVML)"; \
		CC=$$cc CGO_ENABLED=$$cgo GOOS=linux GOARCH=$$arch $(GO) build -ldflags '$(LDFLAGS)' -o $(DIST)/agora-linux-$$arch ./cmd/agora; \
	done
	@cp cmd/agora/agora.service $(DIST)/
	@$(abspath $(DIST))/agora-linux-$$($(GO) env GOHOSTARCH) man --out $(DIST)/man
	@cd $(DIST) && sha256sum agora-linux-amd64 agora-linux-arm64 agora.service man/* > SHA256SUMS
	@echo "make release: $(DIST): $$(cd $(DIST) && ls | tr '\n' ' ')"

# Start one node with embedded defaults: data in .agora-data, libp2p on
# 127.0.0.1:4001 (TCP and QUIC), API on 127.0.0.1:7700.
run: build
	./$(BIN) node --data $(DATA)

vet:
	$(GO) vet $(PKGS)

# What the tests need beyond Go: iproute2 and nftables for the tests that
# build NAT'd sites out of network namespaces (testnet/netns), Chromium
# for the dashboard's browser test (cmd/agora TestDashboard), and podman,
# runc and busybox-static for the image tasks' tests (their image is a
# busybox root file system; docs/containers.md); root only, skipped with
# a message elsewhere or when the packages cannot be had.
testdeps:
	@if [ "$$(id -u)" = 0 ]; then \
		for p in ip:iproute2 nft:nftables chromium:chromium podman:podman runc:runc busybox:busybox-static docker-registry:docker-registry; do \
			cmd=$${p%%:*}; pkg=$${p#*:}; \
			command -v $$cmd >/dev/null 2>&1 && continue; \
			echo "make: installing $$pkg for the tests that need it"; \
			{ DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$pkg || \
			  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$pkg; }; } >/dev/null 2>&1 || \
			echo "make: could not install $$pkg; the tests that need it will skip"; \
		done; \
	fi

test: vet testdeps
	$(GO) test $(TESTFLAGS) $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

# The long fault campaign: the markets under 10,000 seeds of random
# crashes, partitions, message loss and duplication, with the invariants
# checked after every event (market/cluster TestFaultCampaign; make test
# runs 1,000); then the real-binary soak: three nodes on loopback, one at
# a time killed with SIGKILL and restarted, for SOAKFOR (cmd/agora
# TestSoak, seed SOAKSEED). A failing seed prints the one command that
# replays it.
SOAKSEEDS ?= 10000
SOAKFOR ?= 5m
SOAKSEED ?= 1
soak:
	$(GO) test -run TestFaultCampaign -timeout 4h -count 1 ./market/cluster/ -campaign.seeds $(SOAKSEEDS) -campaign.all
	$(GO) test -run TestSoak -timeout 2h -count 1 -v ./cmd/agora/ -soak.for $(SOAKFOR) -soak.seed $(SOAKSEED)

# The benchmark report: the real-network benchmarks on loopback, the
# real binary's submit-to-start path and the same job list on six real
# nodes and in the simulator (cmd/agora), then the
# simulator experiments (synthetic mix, wall time against node count, the
# SWF and Alibaba traces in $(TRACES)), written to docs/performance.md with
# its plots in docs/perf/. REPORTFLAGS sizes the experiments (see
# `go run ./cmd/agora-report -h`); expect about an hour on 2 cores (the
# whole SDSC log under the auction alone takes 12 minutes; -whole-auction=false
# leaves the auction out of the whole-log tables).
# NETCOUNT repeats each real-network benchmark: their figures move with the
# machine's noise, and the report shows every repetition.
# BENCHTMP holds the real-network benchmarks' temporary directories (the
# nodes' data and task work directories): tmpfs where the machine has one,
# because on some disks creating a directory costs milliseconds of kernel
# CPU (1-2 ms under this VM's /tmp, 0.05 ms on tmpfs), which every task
# start pays; the report names the directory and its file system.
TRACES      ?= ../shared/traces
REPORTFLAGS ?=
NETCOUNT    ?= 3
BENCHTMP    ?= $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo $${TMPDIR:-/tmp})
bench:
	@mkdir -p docs/perf
	@d=$$(mktemp -d $(BENCHTMP)/agora-bench.XXXXXX) && \
	echo "tmpdir: $$d ($$(stat -f -c %T $$d))" > docs/perf/netbench.txt && \
	TMPDIR=$$d $(GO) test -run '^$$' -bench 'Net' -benchtime 1x -count $(NETCOUNT) ./testnet/ | tee -a docs/perf/netbench.txt; \
	TMPDIR=$$d $(GO) test -run '^$$' -bench 'SubmitToStart|SimVsReal' -benchtime 1x -count $(NETCOUNT) ./cmd/agora/ | tee -a docs/perf/netbench.txt; \
	rm -rf $$d
	$(GO) run ./cmd/agora-report -traces $(TRACES) -netbench docs/perf/netbench.txt -out docs/performance.md -plots docs/perf $(REPORTFLAGS)

# Every SWF log in $(TRACES), whole, under easy and auction (seed 1), as
# `agora sim --json` prints them, to docs/perf/swf-full.txt. The report
# replays the first jobs of each log under 8 seeds (and each whole log
# once, seed 1); a whole log takes the auction 2 min (KTH) to 12 min
# (SDSC) and EASY seconds on 2 cores.
bench-swf-full: build
	@mkdir -p docs/perf
	@{ echo "# make bench-swf-full at $$(git rev-parse --short HEAD), $$(date -u +%Y-%m-%dT%H:%MZ), $$(nproc) CPUs"; \
	for f in $(TRACES)/*.swf $(TRACES)/*.swf.gz; do [ -f "$$f" ] || continue; \
	for s in easy auction; do echo "## $$(basename $$f) $$s"; ./$(BIN) sim --workload "$$f" --scheduler $$s --json --progress 60s || exit 1; done; done; } > docs/perf/swf-full.txt
	@cat docs/perf/swf-full.txt

# A 256 MiB output moved between two nodes over the data protocol
# against a plain TCP copy of the same bytes (docs/data.md).
bench-data:
	@mkdir -p docs/perf
	$(GO) test -run '^$$' -bench DataTransfer -benchtime 3x -count 3 ./node/data/ | tee docs/perf/databench.txt

# Every Go benchmark of the repository (micro-benchmarks included).
bench-all:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Regenerate protobuf code (committed, so building never needs protoc).
proto:
	cd gossip/pb && protoc --go_out=. --go_opt=paths=source_relative advert.proto
	cd market/wire/pb && protoc --go_out=. --go_opt=paths=source_relative market.proto
	$(GO) test ./market/wire -run '^TestGenerated$$' -count=1 -update

clean:
	rm -rf bin
