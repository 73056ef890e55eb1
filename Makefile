# Salvor's build. `make test` needs nothing but Go: it builds its own tools
# (pinned below) into bin/ and reuses them afterwards.

SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
export PATH := $(BIN):$(PATH)

BUF_VERSION := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
CONTROLLER_GEN_VERSION := v0.21.0

GENERATED := pkg/plugin/proto pkg/apis/salvor/v1/zz_generated.deepcopy.go config/crd docs/cli

.PHONY: all build demo tools testbed generate check-generated vet test test-unit test-compat test-race bench clean

all: build

build:
	$(GO) build -o $(BIN)/salvor ./cmd/salvor

# demo tells a disaster-recovery story on a local control plane; it needs
# nothing but Go (the first run builds the testbed: several minutes).
demo: build testbed
	$(GO) build -o $(BIN)/plugins/ ./examples/...
	$(GO) run ./cmd/salvor-demo --salvor $(BIN)/salvor --plugin-dir $(BIN)/plugins --testbed $(BIN)/testbed --crds config/crd

$(BIN)/buf:
	GOBIN=$(BIN) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
$(BIN)/protoc-gen-go:
	GOBIN=$(BIN) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(BIN)/protoc-gen-go-grpc:
	GOBIN=$(BIN) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
$(BIN)/controller-gen:
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

tools: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/controller-gen

# testbed builds kube-apiserver, etcd and MinIO from the Go module proxy into
# bin/testbed (once; later runs reuse them). Tests start them as real servers.
testbed:
	hack/testbed/build.sh

# generate rewrites every generated file: protobuf and gRPC code, deepcopy
# functions and CRD YAML. The results are committed.
generate: tools
	rm -rf pkg/plugin/proto
	cd proto && buf generate
	controller-gen object paths=./pkg/apis/...
	controller-gen crd paths=./pkg/apis/... output:crd:artifacts:config=config/crd
	$(GO) run ./hack/gendocs docs/cli

# check-generated fails when regenerating would change a committed file.
check-generated: tools
	hack/check-generated.sh $(GENERATED)

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "not gofmt'ed: $$unformatted" >&2; exit 1; fi
	$(GO) vet ./...

test-unit:
	$(GO) test -count=1 -p 2 -timeout 30m ./...

# The compatibility tests live in their own modules (test/compat, and
# test/compat/velero which links Velero), so Salvor never depends on Velero.
test-compat:
	cd test/compat && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd test/compat/velero && $(GO) vet ./... && $(GO) test -count=1 ./...

test: testbed check-generated vet test-unit test-compat

bench:
	hack/bench.sh

# The end-to-end tests with everything built with the race detector
# (about twice as slow as test; not part of it).
test-race:
	hack/race.sh

clean:
	rm -rf $(BIN)
