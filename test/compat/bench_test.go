package compat

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/internal/plugin/host"
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
func BenchmarkExecute(b *testing.B) {
	for _, fw := range []struct {
		name, dir, plugin string
		json              bool
	}{
		{"salvor", salvorDir, "compat.salvor.dev/bench", false},
		{"velero", veleroDir, "compat.velero.io/bench", false},
		{"salvor-json", salvorDir, "compat.salvor.dev/bench", true},
		{"velero-json", veleroDir, "compat.velero.io/bench", true},
	} {
		for _, size := range []int{1 << 10, 100 << 10} {
			it := item(size)
			body, err := it.MarshalJSON()
			if err != nil {
				b.Fatal(err)
			}
			execute := func(a host.BackupItemAction) error {
				if fw.json {
					_, _, err := a.ExecuteJSON(context.Background(), body, "configmaps ns/bench", backup)
					return err
				}
				_, err := a.Execute(context.Background(), it, backup)
				return err
			}
			b.Run(fmt.Sprintf("%s/%dKiB/sequential", fw.name, size>>10), func(b *testing.B) {
				a := action(b, fw.dir, fw.plugin)
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					start := time.Now()
					if err := execute(a); err != nil {
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
				a := action(b, fw.dir, fw.plugin)
				b.SetParallelism(4)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := execute(a); err != nil {
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
