package backup

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
)

// TestSeenSet adds the same keys from eight goroutines: each key is new
// exactly once, every key is then found and none that was never added. With
// a scratch directory the set holds more keys than its memory budget, so its
// shards move to disk and their tables double several times on the way.
func TestSeenSet(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dir   string
		keys  int
		files bool
	}{
		{"in memory", "", 10000, false},
		{"on disk", t.TempDir(), 10000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 64 hashes a shard in memory: 1,024 in all, then tables of
			// 256 slots that double to 1,024.
			s := seenSet{dir: tc.dir, budget: 64}
			var wg sync.WaitGroup
			var fresh atomic.Int64
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range tc.keys {
						dup, err := s.add(fmt.Sprintf("configmaps/ns-%d/cm-%d", i%10, i))
						if err != nil {
							t.Error(err)
							return
						}
						if !dup {
							fresh.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if fresh.Load() != int64(tc.keys) {
				t.Errorf("%d keys were new, want %d", fresh.Load(), tc.keys)
			}
			for i := range tc.keys {
				if ok, err := s.has(fmt.Sprintf("configmaps/ns-%d/cm-%d", i%10, i)); !ok || err != nil {
					t.Fatalf("key %d lost (%v)", i, err)
				}
			}
			if ok, _ := s.has(fmt.Sprintf("configmaps/ns-0/cm-%d", tc.keys)); ok {
				t.Error("a key never added is reported")
			}
			onDisk := 0
			for i := range s.shards {
				if s.shards[i].file != nil {
					onDisk++
					if s.shards[i].m != nil {
						t.Errorf("shard %d is on disk and still holds a map", i)
					}
				}
			}
			if tc.files && onDisk != seenShards || !tc.files && onDisk != 0 {
				t.Errorf("%d shards on disk", onDisk)
			}
			s.close()
			if tc.dir != "" {
				if left, _ := os.ReadDir(tc.dir); len(left) != 0 {
					t.Errorf("close left %d files", len(left))
				}
			}
		})
	}
}
