package backup

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

func TestSeenSet(t *testing.T) {
	var s seenSet
	var wg sync.WaitGroup
	var fresh atomic.Int64
	// Eight goroutines add the same 10,000 keys: each key is new exactly once.
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10000 {
				if !s.add(fmt.Sprintf("configmaps/ns-%d/cm-%d", i%10, i)) {
					fresh.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if fresh.Load() != 10000 {
		t.Errorf("%d keys were new, want 10000", fresh.Load())
	}
	for i := range 10000 {
		if !s.has(fmt.Sprintf("configmaps/ns-%d/cm-%d", i%10, i)) {
			t.Fatalf("key %d lost", i)
		}
	}
	if s.has("configmaps/ns-0/cm-10000") {
		t.Error("a key never added is reported")
	}
}
