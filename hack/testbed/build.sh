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
# the CSI stack and MinIO (the demo keeps its backups in Salvor's built-in
# filesystem store). The builds run at once.
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

# The builds run at once: each has a single-threaded link, and downloads,
# that the others' compiling fills. The Kubernetes binaries are one go build,
# which compiles the packages they share once. A build's output is shown
# when it fails.
pids=() names=()
started=$(date +%s)
start() {
  local name=$1
  shift
  echo "building $name"
  ("$@") > "$out/.build-${#pids[@]}.log" 2>&1 &
  pids+=($!) names+=("$name")
}
missing() {
  for b in "$@"; do [ -x "$out/$b" ] || echo "$b"; done
}

if [ -n "$(missing etcd)" ]; then
  start "etcd $ETCD_VERSION" bash -c "cd '$here/etcd' && go build -o '$out/etcd' ."
fi
kube=$(missing kube-apiserver kube-controller-manager kube-scheduler)
if [ -n "$kube" ]; then
  start "$(echo $kube) $KUBERNETES_VERSION" bash -c "cd '$here/kubernetes' && go build -o '$out/' $(printf './%s ' $kube)"
fi
# The testbed node is rebuilt whenever its source is newer than the binary:
# it is Salvor's own code, not a pinned upstream release.
if [ ! -x "$out/testbed-node" ] || [ -n "$(find "$here/node" -newer "$out/testbed-node" -type f | head -1)" ]; then
  start testbed-node bash -c "cd '$here/node' && go build -o '$out/testbed-node' ."
fi
if [ "${1:-}" != "--demo" ]; then
  if [ -n "$(missing minio)" ]; then
    start "minio $MINIO_VERSION" env GOBIN="$out" go install "github.com/minio/minio@$MINIO_VERSION"
  fi
  snap=$(missing snapshot-controller csi-snapshotter)
  if [ -n "$snap" ]; then
    start "$(echo $snap)" bash -c "cd '$here/csi-snapshotter' && go build -o '$out/' $(printf 'github.com/kubernetes-csi/external-snapshotter/v8/cmd/%s ' $snap)"
  fi
  if [ -n "$(missing csi-provisioner)" ]; then
    start csi-provisioner bash -c "cd '$here/csi-provisioner' && go build -o '$out/csi-provisioner' github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner"
  fi
fi
failed=0
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then
    echo "built ${names[$i]} ($(( $(date +%s) - started )) s in)"
  else
    echo "building ${names[$i]} failed:" >&2
    cat "$out/.build-$i.log" >&2
    failed=1
  fi
  rm -f "$out/.build-$i.log"
done
[ "$failed" = 0 ] || exit 1
if [ "${1:-}" = "--demo" ]; then
  exit 0
fi
# The snapshot CRDs come with the snapshot controller's client module.
if [ ! -d "$out/snapshot-crds" ]; then
  crds=$(cd "$here/csi-snapshotter" && go list -m -f '{{.Dir}}' github.com/kubernetes-csi/external-snapshotter/client/v8)/config/crd
  mkdir -p "$out/snapshot-crds.tmp"
  cp "$crds"/snapshot.storage.k8s.io_*.yaml "$out/snapshot-crds.tmp/"
  chmod 644 "$out"/snapshot-crds.tmp/*
  mv "$out/snapshot-crds.tmp" "$out/snapshot-crds"
fi
