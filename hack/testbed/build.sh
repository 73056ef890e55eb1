#!/usr/bin/env bash
# Builds the testbed's binaries from the Go module proxy into bin/testbed/,
# once: a binary already there is kept (testbed-node, Salvor's own code, is
# rebuilt when its source changed). Every test needs kube-apiserver, etcd
# and MinIO; the CSI tests also run kube-controller-manager, the CSI
# snapshot controller and the csi-snapshotter and csi-provisioner sidecars,
# and the tests that run pods kube-scheduler and testbed-node (hack/testbed/node,
# a module of its own: virtual-kubelet pins a newer client-go than Salvor's).
# The versions are pinned in the wrapper modules beside this script, which
# repeat each module's non-local replace lines, since `go install` refuses
# a module that has them. `hack/testbed/build.sh --regen` rewrites the
# Kubernetes module's go.mod from Kubernetes' own (its staging modules
# replaced by their published twins) after a version change.
# `hack/testbed/build.sh --demo` builds only what `make demo` runs: all but
# the CSI stack.
set -euo pipefail
KUBERNETES_VERSION=v1.36.3
ETCD_VERSION=v3.6.16
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c

here=$(cd "$(dirname "$0")" && pwd)
out=$(cd "$here/../.." && pwd)/bin/testbed
mkdir -p "$out"

if [ "${1:-}" = "--regen" ]; then
  kdir=$(go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
  staging_version="v0.${KUBERNETES_VERSION#v1.}"
  {
    echo "module github.com/salvor-dev/salvor/hack/testbed/kubernetes"
    echo
    echo "go 1.26.0"
    echo
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    echo
    echo "replace ("
    grep -E '^\s*k8s.io/[^ ]+ => ./staging/src/' "$kdir/go.mod" | awk -v v="$staging_version" '{print "\t" $1 " => " $1 " " v}'
    echo ")"
  } > "$here/kubernetes/go.mod"
  (cd "$here/kubernetes" && go mod tidy)
  (cd "$here/etcd" && go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION" && go mod tidy)
fi

if [ ! -x "$out/etcd" ]; then
  echo "building etcd $ETCD_VERSION (under a minute)"
  (cd "$here/etcd" && go build -o "$out/etcd" .)
fi
if [ ! -x "$out/kube-apiserver" ]; then
  echo "building kube-apiserver $KUBERNETES_VERSION (4-8 minutes the first time)"
  (cd "$here/kubernetes" && go build -o "$out/kube-apiserver" ./kube-apiserver)
fi
if [ ! -x "$out/kube-controller-manager" ]; then
  echo "building kube-controller-manager $KUBERNETES_VERSION (3-5 minutes the first time)"
  (cd "$here/kubernetes" && go build -o "$out/kube-controller-manager" ./kube-controller-manager)
fi
if [ ! -x "$out/kube-scheduler" ]; then
  echo "building kube-scheduler $KUBERNETES_VERSION (1-3 minutes the first time)"
  (cd "$here/kubernetes" && go build -o "$out/kube-scheduler" ./kube-scheduler)
fi
# The testbed node is rebuilt whenever its source is newer than the binary:
# it is Salvor's own code, not a pinned upstream release.
if [ ! -x "$out/testbed-node" ] || [ -n "$(find "$here/node" -newer "$out/testbed-node" -type f | head -1)" ]; then
  echo "building testbed-node (1-2 minutes the first time)"
  (cd "$here/node" && go build -o "$out/testbed-node" .)
fi
if [ ! -x "$out/minio" ]; then
  echo "building minio $MINIO_VERSION (2-3 minutes the first time)"
  GOBIN="$out" go install "github.com/minio/minio@$MINIO_VERSION"
fi
if [ "${1:-}" = "--demo" ]; then
  exit 0
fi
for tool in snapshot-controller csi-snapshotter; do
  if [ ! -x "$out/$tool" ]; then
    echo "building $tool (1-2 minutes the first time)"
    (cd "$here/csi-snapshotter" && go build -o "$out/$tool" "github.com/kubernetes-csi/external-snapshotter/v8/cmd/$tool")
  fi
done
if [ ! -x "$out/csi-provisioner" ]; then
  echo "building csi-provisioner (1-2 minutes the first time)"
  (cd "$here/csi-provisioner" && go build -o "$out/csi-provisioner" github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner)
fi
# The snapshot CRDs come with the snapshot controller's client module.
if [ ! -d "$out/snapshot-crds" ]; then
  crds=$(cd "$here/csi-snapshotter" && go list -m -f '{{.Dir}}' github.com/kubernetes-csi/external-snapshotter/client/v8)/config/crd
  mkdir -p "$out/snapshot-crds.tmp"
  cp "$crds"/snapshot.storage.k8s.io_*.yaml "$out/snapshot-crds.tmp/"
  chmod 644 "$out"/snapshot-crds.tmp/*
  mv "$out/snapshot-crds.tmp" "$out/snapshot-crds"
fi
