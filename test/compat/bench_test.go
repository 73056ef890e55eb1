package compat

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/internal/plugin/host"
	biav2 "github.com/salvor-dev/salvor/pkg/plugin/proto/backupitemaction/v2"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

// item returns a ConfigMap whose JSON is about size bytes.
func item(size int) *unstructured.Unstructured {
	u := cm("bench")
	data := map[string]any{}
	chunk := strings.Repeat("x", 1000)
	for i := 0; i*1000 < size-200; i++ {
		data[fmt.Sprintf("k%04d", i)] = chunk
	}
	u.Object["data"] = data
	return u
}

// BenchmarkExecute measures one BackupItemAction v2 Execute round trip,
// deadlines on, through Salvor's host, for the same action built with
// Salvor's SDK and with Velero's framework. Besides ns/op it reports the
// median and 99th percentile of single calls when run sequentially. The
// -json variants call through ExecuteJSON, as a backup does: the item goes
// and comes back as JSON, with no decode or encode on the host's side.
// grpc-floor is the same request sent with the bare generated client to a
// bare gRPC server that echoes the item (grpcfloor): what the process
// boundary and gRPC alone cost on this machine, the floor the others stand
// on.
func BenchmarkExecute(b *testing.B) {
	for _, fw := range []struct {
		name, dir, plugin string
		json, floor       bool
	}{
		{"salvor", salvorDir, "compat.salvor.dev/bench", false, false},
		{"velero", veleroDir, "compat.velero.io/bench", false, false},
		{"salvor-json", salvorDir, "compat.salvor.dev/bench", true, false},
		{"velero-json", veleroDir, "compat.velero.io/bench", true, false},
		{"grpc-floor", "", "", true, true},
	} {
		for _, size := range []int{1 << 10, 100 << 10} {
			it := item(size)
			body, err := it.MarshalJSON()
			if err != nil {
				b.Fatal(err)
			}
			caller := func(b *testing.B) func() error {
				if fw.floor {
					return floorCall(b, body)
				}
				a := action(b, fw.dir, fw.plugin)
				if fw.json {
					return func() error {
						_, _, err := a.ExecuteJSON(context.Background(), body, "configmaps ns/bench", backup)
						return err
					}
				}
				return func() error {
					_, err := a.Execute(context.Background(), it, backup)
					return err
				}
			}
			b.Run(fmt.Sprintf("%s/%dKiB/sequential", fw.name, size>>10), func(b *testing.B) {
				execute := caller(b)
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					start := time.Now()
					if err := execute(); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			})
			b.Run(fmt.Sprintf("%s/%dKiB/parallel", fw.name, size>>10), func(b *testing.B) {
				execute := caller(b)
				b.SetParallelism(4)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := execute(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

var (
	floorOnce   sync.Once
	floorClient biav2.BackupItemActionClient
	floorErr    error
)

// floorCall returns a call of the bare gRPC echo server, started once for
// the run, with the request a host would send for item: the item, the
// Backup's JSON, and a deadline.
func floorCall(b *testing.B, item []byte) func() error {
	b.Helper()
	floorOnce.Do(func() { floorClient, floorErr = startFloor() })
	if floorErr != nil {
		b.Fatal(floorErr)
	}
	bk, err := json.Marshal(backup)
	if err != nil {
		b.Fatal(err)
	}
	req := &biav2.ExecuteRequest{Plugin: "grpc-floor", Item: item, Backup: bk}
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		resp, err := floorClient.Execute(ctx, req)
		if err == nil && len(resp.GetItem()) != len(item) {
			err = fmt.Errorf("grpcfloor echoed %d bytes of a %d-byte item", len(resp.GetItem()), len(item))
		}
		return err
	}
}

// startFloor starts grpcfloor on a socket in the run's directory and dials
// it with the host's transport settings. The process ends with the run.
func startFloor() (biav2.BackupItemActionClient, error) {
	sock := filepath.Join(floorDir, "floor.sock")
	cmd := exec.Command(filepath.Join(floorDir, "grpcfloor"), sock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting grpcfloor: %w", err)
	}
	floorProc = cmd.Process
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "serving" {
		return nil, fmt.Errorf("grpcfloor did not start: %q %v", line, err)
	}
	conn, err := grpc.NewClient("unix:"+sock, append(wire.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		return nil, fmt.Errorf("dialling grpcfloor: %w", err)
	}
	return biav2.NewBackupItemActionClient(conn), nil
}

var (
	managersMu sync.Mutex
	managers   = map[string]*host.Manager{}
)

// action returns the benchmark action, its process started and warmed up
// once per plugin directory for the whole run.
func action(b *testing.B, dir, name string) host.BackupItemAction {
	b.Helper()
	managersMu.Lock()
	m, ok := managers[dir]
	if !ok {
		m = host.NewManager(host.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := m.Discover(ctx, dir)
		cancel()
		if err != nil {
			managersMu.Unlock()
			b.Fatal(err)
		}
		managers[dir] = m
	}
	managersMu.Unlock()
	a, err := host.Get(context.Background(), m, host.BackupItemActions, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	for range 100 {
		if _, err := a.Execute(context.Background(), item(1024), backup); err != nil {
			b.Fatal(err)
		}
	}
	return a
}
