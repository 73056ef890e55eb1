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
STATICCHECK_VERSION := v0.8.2
# Helm renders and installs charts/salvor in the end-to-end tests.
HELM_VERSION := v4.2.4

GENERATED := pkg/plugin/proto pkg/apis/salvor/v1/zz_generated.deepcopy.go config/crd docs/cli charts/salvor/crds charts/salvor/files/roles.yaml charts/salvor/files/tenants.yaml

.PHONY: test-rest helm chart-resources all build release image plugin-images cross lint test-e2e demo demo-csi tools testbed generate check-generated vet test test-unit test-compat test-race bench clean fuzz

all: build

# Builds say which Salvor they are (`salvor version`, salvor_build_info):
# the version from git tags, the commit, and the commit's date (not the
# build's, so the same commit builds the same bytes).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BUILD_DATE ?= $(shell git log -1 --format=%cI 2>/dev/null || echo unknown)
BUILDINFO := github.com/salvor-dev/salvor/internal/buildinfo
LDFLAGS := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) -X $(BUILDINFO).date=$(BUILD_DATE)

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/salvor ./cmd/salvor

# PLATFORMS are where salvor runs: the CLI on every desktop, the server on
# Linux. Every build for them is static (no cgo) and reproducible
# (-trimpath, the commit's date), and they share one build cache.
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
STATIC := CGO_ENABLED=0 $(GO) build -trimpath

# cross checks that salvor builds for every OS (in make test): only
# `salvor server` and `salvor run-plugins` need Linux to run, but the CLI
# must build everywhere. Salvor's code differs by OS only (files for
# linux, unix and the rest), so one architecture per OS other than the
# native one. hack/crosscheck type-checks salvor and every package it
# imports for each, from source: what a build there would refuse, in a
# minute or two, where compiling them all again for each platform took
# ten minutes a platform on a fresh machine. make release compiles every
# platform.
CROSS := darwin/arm64,windows/amd64
cross:
	$(GO) run ./hack/crosscheck -platforms $(CROSS) ./cmd/salvor

# release writes salvor for every platform, with SHA-256 checksums.
release:
	rm -rf $(BIN)/release && mkdir -p $(BIN)/release
	@for t in $(PLATFORMS); do os=$${t%/*}; arch=$${t#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  echo "building salvor $(VERSION) for $$os/$$arch"; \
	  GOOS=$$os GOARCH=$$arch $(STATIC) -ldflags "$(LDFLAGS)" -o $(BIN)/release/salvor-$(VERSION)-$$os-$$arch$$ext ./cmd/salvor || exit 1; done
	cd $(BIN)/release && sha256sum salvor-* > SHA256SUMS && cat SHA256SUMS

# image writes salvor's OCI image for linux/amd64 and linux/arm64 as an OCI
# layout tarball, bin/salvor-image.tar, with no container daemon and no
# base image (internal/ociimage); docs/install.md says how to push it.
IMAGE_PLATFORMS := linux/amd64 linux/arm64
IMAGE := $(GO) run ./hack/image --created $(BUILD_DATE) --version $(VERSION) --revision $(COMMIT)
image:
	@mkdir -p $(BIN)/image
	@for t in $(IMAGE_PLATFORMS); do echo "building salvor $(VERSION) for $$t"; \
	  GOOS=$${t%/*} GOARCH=$${t#*/} $(STATIC) -ldflags "$(LDFLAGS) -s -w" -o $(BIN)/image/$$t/salvor ./cmd/salvor || exit 1; done
	$(IMAGE) --out $(BIN)/salvor-image.tar --entrypoint /usr/local/bin/salvor \
	  $(foreach t,$(IMAGE_PLATFORMS),--file $(t):/usr/local/bin/salvor=$(BIN)/image/$(t)/salvor)

# plugin-images writes an image per example plugin, bin/plugin-images/NAME.tar,
# as `salvor install --plugins` runs them: an init container whose
# entrypoint (salvor-plugin-copy) copies /plugins/NAME into /target.
EXAMPLES := $(notdir $(patsubst %/,%,$(dir $(wildcard examples/*/main.go))))
plugin-images:
	@mkdir -p $(BIN)/plugin-images
	@for t in $(IMAGE_PLATFORMS); do echo "building salvor-plugin-copy and the example plugins for $$t"; mkdir -p $(BIN)/image/$$t; \
	  GOOS=$${t%/*} GOARCH=$${t#*/} $(STATIC) -ldflags "-s -w" -o $(BIN)/image/$$t/ ./cmd/salvor-plugin-copy $(addprefix ./examples/,$(EXAMPLES)) || exit 1; done
	@for p in $(EXAMPLES); do \
	  $(IMAGE) --out $(BIN)/plugin-images/$$p.tar --title $$p --entrypoint /usr/local/bin/salvor-plugin-copy \
	    $(foreach t,$(IMAGE_PLATFORMS),--file $(t):/usr/local/bin/salvor-plugin-copy=$(BIN)/image/$(t)/salvor-plugin-copy --file $(t):/plugins/$$p=$(BIN)/image/$(t)/$$p) || exit 1; done

# demo tells a disaster-recovery story on a local control plane; it needs
# nothing but Go (the first run builds the testbed: several minutes).
# demo builds only the part of the testbed it runs (etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler and the testbed node; not the
# CSI stack, nor MinIO: its backups go to Salvor's filesystem store), then
# salvor and the example plugins: after the Kubernetes binaries, most of
# salvor's packages (client-go, gRPC, ...) are in Go's build cache, built
# at the same versions (hack/testbed/align), where building both at once
# would compile them twice.
demo:
	hack/testbed/build.sh --demo
	$(MAKE) --no-print-directory build
	$(GO) build -o $(BIN)/plugins/ ./examples/...
	$(GO) run ./cmd/salvor-demo --salvor $(BIN)/salvor --plugin-dir $(BIN)/plugins --testbed $(BIN)/testbed --crds config/crd

# demo-csi tells the CSI story on the whole testbed (CSI stack, a node that
# runs pods, MinIO): a volume's data moved into the bucket by a mover pod,
# the storage lost, the volume restored from the bucket alone.
demo-csi: build testbed
	$(GO) run ./cmd/salvor-demo --csi --salvor $(BIN)/salvor --testbed $(BIN)/testbed --crds config/crd

$(BIN)/buf:
	GOBIN=$(BIN) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
$(BIN)/protoc-gen-go:
	GOBIN=$(BIN) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(BIN)/protoc-gen-go-grpc:
	GOBIN=$(BIN) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
$(BIN)/controller-gen:
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
$(BIN)/helm:
	GOBIN=$(BIN) $(GO) install -trimpath helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)
# helm builds the Helm the chart tests use (bin/helm).
helm: $(BIN)/helm
$(BIN)/staticcheck:
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

tools: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/controller-gen $(BIN)/staticcheck

# testbed builds the testbed (kube-apiserver, etcd, kube-controller-manager,
# kube-scheduler, the CSI stack, MinIO and the testbed node) into bin/testbed
# (once; later runs reuse them). Tests start them as real servers.
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
	$(GO) run ./hack/genchart

# check-generated fails when regenerating would change a committed file,
# or when the testbed's modules no longer build the modules they share at
# one version (go run ./hack/testbed/align mends that).
check-generated: tools
	hack/check-generated.sh $(GENERATED)
	$(GO) run ./hack/testbed/align -check

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "not gofmt'ed: $$unformatted" >&2; exit 1; fi
	$(GO) vet ./...
	cd hack/testbed/node && $(GO) vet ./...

# lint runs staticcheck (pinned above) over the main module.
lint: $(BIN)/staticcheck
	staticcheck ./...

# test-unit runs every package's own tests with the race detector: they run
# in process (a package's tests may start an API server, MinIO or plugin
# subprocesses, but the code under test is in the test binary). Four
# packages at once: most wait on an API server or a subprocess part of the
# time. hack/unit.sh links the test binaries with go test -c, whose links
# Go's build cache keeps (go test's own are redone on every run). The test
# binaries build kopia with its `testing` tag: repositories they make then
# derive their keys without scrypt, whose 64 MiB per open, under the race
# detector, was most of the unit tests' time. The binaries a test builds
# (salvor, plugins), the end-to-end tests and the benchmarks use kopia as
# shipped. -vet=off here and in test-e2e, fuzz and test-compat: make vet
# checks the same packages with more analyzers, and go test's own vet pass
# analyzes every dependency again (under -race's or fuzzing's build
# settings, or beside make vet, which make test starts at once).
test-unit:
	PARALLEL=4 hack/unit.sh
	cd hack/testbed/node && $(GO) test -count=1 ./...

# test-e2e runs the end-to-end tests: the built salvor server, CLI and
# plugins on the testbed. E2E_PARALLEL tests run at once (each has its own
# control plane). Four at once keep 2 cores busy: 26 min 24 s alone at
# 97-100% CPU, and 31.5 minutes beside the rest of make test (2026-12-07);
# more at once would not be faster here. Most of that CPU is the API
# servers serving the tests, not starting: sharing control planes between
# tests (tried 2026-12-07: 167 tests on 16-18 planes) was no faster.
E2E_PARALLEL ?= 4
test-e2e: testbed helm
	$(GO) test -vet=off -count=1 -timeout 60m -parallel $(E2E_PARALLEL) ./test/e2e

# chart-resources rewrites the chart's list of built-in resources from the
# testbed API server's discovery (after a Kubernetes upgrade); the
# end-to-end tests fail while it is stale.
chart-resources: testbed helm
	SALVOR_WRITE_CHART_RESOURCES=1 $(GO) test -count=1 -run TestChartBuiltinResources ./test/e2e

# The compatibility tests live in their own modules (test/compat, and
# test/compat/velero which links Velero), so Salvor never depends on Velero.
test-compat:
	cd test/compat && $(GO) vet ./... && $(GO) test -vet=off -count=1 ./...
	cd test/compat/velero && $(GO) vet ./... && $(GO) test -vet=off -count=1 ./...

# fuzz runs every fuzz target over bucket content (the tarball reader, the
# side files' readers) for FUZZTIME each: a parser of what an attacker may
# have written must not panic on anything.
FUZZTIME ?= 15s
FUZZ_TARGETS := ./internal/archive:FuzzRead ./internal/persistence:FuzzSideFiles
fuzz:
	@for t in $(FUZZ_TARGETS); do echo "fuzzing $${t#*:} in $${t%:*} for $(FUZZTIME)"; \
	  $(GO) test -vet=off -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) $${t%:*} || exit 1; done

# test runs the end-to-end tests beside everything else, the longest first:
# alone they leave part of 2 cores idle while they wait on controllers,
# which the checks, builds and unit tests use meanwhile. Two jobs at once: the
# end-to-end tests in one, started first, the rest one after another in the
# other (make -j2 ran the rest's steps two at a time and let the end-to-end
# tests wait for a slot: 27 minutes on a fresh machine). The code
# generators and the linter are built in the rest's stream, by the steps
# that use them: on a fresh machine that took 7 minutes, which the
# end-to-end tests no longer wait for.
test: testbed helm
	@$(MAKE) --no-print-directory test-e2e & e2e=$$!; \
	$(MAKE) --no-print-directory test-rest; rest=$$?; \
	wait $$e2e && [ $$rest = 0 ]

test-rest: check-generated vet lint cross test-unit fuzz test-compat

bench:
	hack/bench.sh

# The end-to-end tests with everything built with the race detector
# (about twice as slow as test; not part of it).
test-race:
	hack/race.sh

clean:
	rm -rf $(BIN)
