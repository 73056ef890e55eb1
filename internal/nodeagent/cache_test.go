package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCachesKeptPerRepositoryAndBounded(t *testing.T) {
	root := filepath.Join(t.TempDir(), "caches")
	// A cache an earlier run of the agent left, older than any below.
	earlier := filepath.Join(root, "earlier")
	if err := os.MkdirAll(earlier, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(earlier, old, old); err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	c := &caches{now: func() time.Time { clock = clock.Add(time.Second); return clock }}
	open := func(loc, ns, pw string) (string, func()) {
		dir, release := c.acquire(root, loc, ns, pw)
		if err := os.MkdirAll(dir, 0o700); err != nil { // as kopia makes it
			t.Fatal(err)
		}
		return dir, release
	}

	first, release := open("loc-uid", "team-a", "pw")
	again, releaseAgain := open("loc-uid", "team-a", "pw")
	if first != again {
		t.Fatalf("one repository, two caches: %s and %s", first, again)
	}
	for _, other := range [][3]string{{"loc-uid", "team-b", "pw"}, {"other-uid", "team-a", "pw"}, {"loc-uid", "team-a", "new-pw"}} {
		if dir, rel := open(other[0], other[1], other[2]); dir == first {
			t.Errorf("repository %v shares the cache of loc-uid/team-a/pw", other)
		} else {
			rel()
		}
	}
	// Still in use (first and again): never removed, however many others.
	for i := range 2 * maxCaches {
		_, rel := open("loc-uid", fmt.Sprintf("ns-%d", i), "pw")
		rel()
	}
	if _, err := os.Stat(first); err != nil {
		t.Fatalf("the cache in use was removed: %v", err)
	}
	if _, err := os.Stat(earlier); err == nil {
		t.Fatal("the earlier run's cache, the least recently used, was kept beyond the bound")
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != maxCaches {
		t.Fatalf("%d caches on the node, want the bound, %d", len(entries), maxCaches)
	}

	// Once released, it is the least recently used and goes first.
	release()
	releaseAgain()
	for i := range maxCaches {
		_, rel := open("loc-uid", fmt.Sprintf("later-%d", i), "pw")
		rel()
	}
	if _, err := os.Stat(first); err == nil {
		t.Fatal("a released cache, the least recently used, was kept beyond the bound")
	}
}
