package nodeagent

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// maxCaches is how many repositories' kopia caches an agent keeps on its
// node at most; each holds up to cacheBytes of indexes and directory
// listings. The least recently used one not in use goes first.
const (
	maxCaches  = 8
	cacheBytes = 256 << 20
)

// caches are the agent's kopia caches, one directory per repository (a
// location, by UID, and a namespace) under WorkDir/caches, kept between
// jobs: a job that opens a repository an earlier one used does not read
// its indexes from the bucket again (as Velero's node agent keeps its
// own). The password is part of the key, so a repository made again
// with another password starts with an empty cache.
type caches struct {
	mu    sync.Mutex
	known map[string]*cacheUse // by directory name
	dir   string               // where they are: the first acquire's root
	read  bool                 // dir's directories from an earlier run are in known
	now   func() time.Time     // nil: time.Now
}

func (c *caches) time() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

type cacheUse struct {
	users int
	used  time.Time
}

// acquire returns the cache directory under root for a repository, and
// release, to call once the repository is closed. It may remove the
// caches of other repositories to stay within maxCaches.
func (c *caches) acquire(root, locationUID, namespace, password string) (string, func()) {
	sum := sha256.Sum256([]byte(locationUID + "\x00" + namespace + "\x00" + password))
	name := hex.EncodeToString(sum[:12])
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir == "" {
		c.dir = root
	}
	c.readEarlier()
	u := c.known[name]
	if u == nil {
		u = &cacheUse{}
		c.known[name] = u
	}
	u.users++
	u.used = c.time()
	c.evict()
	return filepath.Join(c.dir, name), func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		u.users--
		u.used = c.time()
	}
}

// readEarlier takes in the caches an earlier run of the agent left (its
// work directory outlives a restarted container), by their times.
func (c *caches) readEarlier() {
	if c.read {
		return
	}
	c.read = true
	if c.known == nil {
		c.known = map[string]*cacheUse{}
	}
	entries, _ := os.ReadDir(c.dir)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && e.IsDir() {
			c.known[e.Name()] = &cacheUse{used: fi.ModTime()}
		}
	}
}

// evict removes the least recently used caches not in use while there
// are more than maxCaches.
func (c *caches) evict() {
	for len(c.known) > maxCaches {
		oldest := ""
		for name, u := range c.known {
			if u.users == 0 && (oldest == "" || u.used.Before(c.known[oldest].used)) {
				oldest = name
			}
		}
		if oldest == "" {
			return // all in use: each job has its own until some end
		}
		// A cache is only a copy of what the bucket holds: removing it
		// loses nothing.
		_ = os.RemoveAll(filepath.Join(c.dir, oldest))
		delete(c.known, oldest)
	}
}
