#!/usr/bin/env bash
# Runs Salvor's benchmarks and prints the machine they ran on, for
# docs/benchmarks.md. Usage: hack/bench.sh [go test -bench regexp]
set -euo pipefail
cd "$(dirname "$0")/.."
pattern=${1:-.}
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go version | cut -d' ' -f3)"
echo "## Plugin call round trips (test/compat, BenchmarkExecute)"
(cd test/compat && go test -run '^$' -bench "$pattern" -benchtime 3000x -count 1 .)
echo "## Backup of ConfigMaps on the testbed (test/e2e, BenchmarkBackup; SALVOR_BENCH_ITEMS=${SALVOR_BENCH_ITEMS:-10000})"
make --no-print-directory testbed >/dev/null
go test -run '^$' -bench 'BenchmarkBackup|BenchmarkRestore' -benchtime 1x -timeout 2h ./test/e2e 2>&1 | grep -E '^(Benchmark|ok|FAIL|---|\s+bench_test)'
echo "## Backup and restore on fresh servers (test/e2e, BenchmarkScale; SALVOR_BENCH_ITEMS=${SALVOR_BENCH_ITEMS:-10000})"
go test -run '^$' -bench BenchmarkScale -benchtime 1x -timeout 4h ./test/e2e 2>&1 | grep -E '^(Benchmark|ok|FAIL|---|\||\s+(bench|velero_bench)_test)'
echo "## Salvor beside Velero, same control plane, MinIO and objects (test/e2e, BenchmarkBesideVelero; SALVOR_BENCH_VELERO_ITEMS=${SALVOR_BENCH_VELERO_ITEMS:-10000}; builds Velero's server from test/compat/velero)"
go test -run '^$' -bench BenchmarkBesideVelero -benchtime 1x -timeout 4h ./test/e2e 2>&1 | grep -E '^(Benchmark|ok|FAIL|---|\||\s+(bench|velero_bench)_test)'
echo "## Reading and spooling a tarball of 10,000 ConfigMaps (internal/restore, BenchmarkRead)"
go test -run '^$' -bench BenchmarkRead -benchmem -count 3 ./internal/restore 2>&1 | grep -E '^(Benchmark|ok|FAIL)'
echo "## Volume snapshots (pkg/snapshot/localvolume, BenchmarkLocalVolume; SALVOR_BENCH_VOLUME_MIB=${SALVOR_BENCH_VOLUME_MIB:-256})"
go test -run '^$' -bench BenchmarkLocalVolume -benchtime 1x ./pkg/snapshot/localvolume 2>&1 | grep -E '^(Benchmark|ok|FAIL)'
echo "## Volume data: the data mover's code beside kopia's CLI (same version, same data, same MinIO) and cat (internal/kopiarepo, BenchmarkMoverBesideKopiaCLI; SALVOR_BENCH_MOVER_MIB=${SALVOR_BENCH_MOVER_MIB:-1024}, SALVOR_BENCH_SMALL_FILES=${SALVOR_BENCH_SMALL_FILES:-100000}; builds bin/kopia-<version>)"
go test -run '^$' -bench BenchmarkMoverBesideKopiaCLI -benchtime 1x -timeout 2h ./internal/kopiarepo 2>&1 | grep -E '^(Benchmark|ok|FAIL|---|\|)'
echo "## File-system backup: Salvor's node agent beside Velero 1.18's and kopia's CLI (same pod volumes, testbed node and MinIO) (test/e2e, BenchmarkFSBackupBesideVelero; SALVOR_BENCH_FS_MIB=${SALVOR_BENCH_FS_MIB:-1024}, SALVOR_BENCH_SMALL_FILES=${SALVOR_BENCH_SMALL_FILES:-100000}; builds Velero and bin/kopia-<version>)"
go test -run '^$' -bench BenchmarkFSBackupBesideVelero -benchtime 1x -timeout 2h ./test/e2e 2>&1 | grep -E '^(Benchmark|ok|FAIL|---|\|)'
