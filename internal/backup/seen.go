package backup

import (
	"hash/fnv"
	"sync"
)

// seenSet remembers which items a backup has taken, in 16 bytes an item
// (a 128-bit FNV-1a hash of its key) rather than the key itself: it is the
// one structure that grows with the number of items. Two keys colliding in
// 128 bits is not a practical concern at any cluster's size.
type seenSet struct {
	shards [64]struct {
		mu sync.Mutex
		m  map[[16]byte]struct{}
	}
}

func hashKey(key string) [16]byte {
	h := fnv.New128a()
	h.Write([]byte(key))
	var out [16]byte
	copy(out[:], h.Sum(nil))
	return out
}

// add records key and reports whether it was already there.
func (s *seenSet) add(key string) bool {
	k := hashKey(key)
	sh := &s.shards[k[0]%64]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m == nil {
		sh.m = map[[16]byte]struct{}{}
	}
	if _, ok := sh.m[k]; ok {
		return true
	}
	sh.m[k] = struct{}{}
	return false
}

// has reports whether key was recorded.
func (s *seenSet) has(key string) bool {
	k := hashKey(key)
	sh := &s.shards[k[0]%64]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, ok := sh.m[k]
	return ok
}
