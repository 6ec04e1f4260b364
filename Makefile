# Agora — the two commands a newcomer needs are `make run` and `make test`.
GO        ?= go
BIN       := bin/agora
DATA      ?= $(CURDIR)/.agora-data
PKGS      := ./...
TESTFLAGS ?= -race -timeout 20m

.PHONY: all build run test vet fmt bench proto clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/agora

# Start one node with embedded defaults: data in .agora-data, libp2p on
# 127.0.0.1:4001 (TCP and QUIC), API on 127.0.0.1:7700.
run: build
	./$(BIN) node --data $(DATA)

vet:
	$(GO) vet $(PKGS)

test: vet
	$(GO) test $(TESTFLAGS) $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Regenerate protobuf code (committed, so building never needs protoc).
proto:
	cd gossip/pb && protoc --go_out=. --go_opt=paths=source_relative agora.proto market.proto

clean:
	rm -rf bin
