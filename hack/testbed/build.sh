#!/usr/bin/env bash
# Builds the testbed's binaries — kube-apiserver, etcd and MinIO, at the
# versions pinned below — from the Go module proxy into bin/testbed/, once:
# a binary already there is kept. `hack/testbed/build.sh --regen` rewrites the
# kube-apiserver module's go.mod from Kubernetes' own (its staging modules
# replaced by their published twins) after a version change.
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
    echo "module github.com/salvor-dev/salvor/hack/testbed/kube-apiserver"
    echo
    echo "go 1.26.0"
    echo
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    echo
    echo "replace ("
    grep -E '^\s*k8s.io/[^ ]+ => ./staging/src/' "$kdir/go.mod" | awk -v v="$staging_version" '{print "\t" $1 " => " $1 " " v}'
    echo ")"
  } > "$here/kube-apiserver/go.mod"
  (cd "$here/kube-apiserver" && go mod tidy)
  (cd "$here/etcd" && go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION" && go mod tidy)
fi

if [ ! -x "$out/etcd" ]; then
  echo "building etcd $ETCD_VERSION (under a minute)"
  (cd "$here/etcd" && go build -o "$out/etcd" .)
fi
if [ ! -x "$out/kube-apiserver" ]; then
  echo "building kube-apiserver $KUBERNETES_VERSION (4-8 minutes the first time)"
  (cd "$here/kube-apiserver" && go build -o "$out/kube-apiserver" .)
fi
if [ ! -x "$out/minio" ]; then
  echo "building minio $MINIO_VERSION (2-3 minutes the first time)"
  GOBIN="$out" go install "github.com/minio/minio@$MINIO_VERSION"
fi
