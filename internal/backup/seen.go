package backup

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// seenSet remembers which items a backup has taken, by a 128-bit FNV-1a hash
// of each key (two keys colliding in 128 bits is not a practical concern at
// any cluster's size). It is the one structure of a backup that grows with
// its items, so it is kept off the heap past a small budget: each of its
// shards holds up to seenMemoryKeys hashes in a map, then moves them to an
// open-addressing hash table in a file of the backup's scratch directory
// and works there, a block of slots read per probe. The kernel's page cache
// keeps the file's busy blocks in memory, outside the server's own.
type seenSet struct {
	dir string // the scratch directory; "" keeps every shard in memory
	// budget is how many hashes a shard keeps in memory; 0 means
	// seenMemoryKeys.
	budget int
	shards [seenShards]seenShard
}

const (
	seenShards     = 16
	seenMemoryKeys = 1024 // per shard: 16 Ki items in all, under 1 MiB
	slotSize       = 16
	blockSlots     = 16
	blockSize      = slotSize * blockSlots
)

type seenShard struct {
	mu   sync.Mutex
	m    map[[16]byte]struct{}
	file *os.File
	// slots is the table's size (a power of two, at least a block); used
	// counts the filled slots.
	slots, used uint64
}

func hashKey(key string) [16]byte {
	h := fnv.New128a()
	h.Write([]byte(key))
	var out [16]byte
	copy(out[:], h.Sum(nil))
	if out == ([16]byte{}) {
		out[15] = 1 // all zeros marks an empty slot
	}
	return out
}

// spread folds a hash into 64 well-mixed bits for choosing a shard and a
// slot: FNV's own bytes are not evenly spread (its first byte takes a few
// values far more often than others over keys that differ at their end).
func spread(k [16]byte) uint64 {
	x := binary.LittleEndian.Uint64(k[:8]) ^ binary.LittleEndian.Uint64(k[8:])
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	return x ^ x>>33
}

func (s *seenSet) shard(k [16]byte) *seenShard { return &s.shards[spread(k)%seenShards] }

// add records key and reports whether it was already there.
func (s *seenSet) add(key string) (bool, error) {
	k := hashKey(key)
	sh := s.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.file == nil {
		if _, ok := sh.m[k]; ok {
			return true, nil
		}
		if sh.m == nil {
			sh.m = map[[16]byte]struct{}{}
		}
		sh.m[k] = struct{}{}
		if len(sh.m) > cmp.Or(s.budget, seenMemoryKeys) && s.dir != "" {
			return false, sh.spill(s.dir)
		}
		return false, nil
	}
	return sh.insert(k)
}

// has reports whether key was recorded.
func (s *seenSet) has(key string) (bool, error) {
	k := hashKey(key)
	sh := s.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.file == nil {
		_, ok := sh.m[k]
		return ok, nil
	}
	_, found, err := sh.find(sh.file, sh.slots, k)
	return found, err
}

// close removes the shards' files.
func (s *seenSet) close() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		if sh.file != nil {
			sh.file.Close()
			os.Remove(sh.file.Name())
			sh.file = nil
		}
		sh.m = nil
		sh.mu.Unlock()
	}
}

// spill moves the shard's map into a table on disk, four times its size.
func (sh *seenShard) spill(dir string) error {
	f, slots, err := newTable(dir, uint64(4*len(sh.m)))
	if err != nil {
		return err
	}
	sh.file, sh.slots, sh.used = f, slots, 0
	for k := range sh.m {
		if _, err := sh.insert(k); err != nil {
			return err
		}
	}
	sh.m = nil
	return nil
}

// newTable makes an empty table of at least n slots (a sparse file of zeros).
func newTable(dir string, n uint64) (*os.File, uint64, error) {
	slots := uint64(blockSlots)
	for slots < n {
		slots *= 2
	}
	f, err := os.CreateTemp(dir, "seen-")
	if err != nil {
		return nil, 0, fmt.Errorf("the backup's set of items seen: %w", err)
	}
	if err := f.Truncate(int64(slots * slotSize)); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, 0, fmt.Errorf("the backup's set of items seen: %w", err)
	}
	return f, slots, nil
}

// find probes table f of the given size for k from its home slot on: it
// returns k's slot, or the empty slot where k would go.
func (sh *seenShard) find(f *os.File, slots uint64, k [16]byte) (uint64, bool, error) {
	mask := slots - 1
	i := spread(k) / seenShards & mask
	var block [blockSize]byte
	for probed := uint64(0); probed < slots; {
		start := i &^ (blockSlots - 1)
		if _, err := f.ReadAt(block[:], int64(start*slotSize)); err != nil {
			return 0, false, fmt.Errorf("the backup's set of items seen: %w", err)
		}
		for j := i - start; j < blockSlots; j++ {
			slot := [16]byte(block[j*slotSize:])
			switch slot {
			case k:
				return start + j, true, nil
			case [16]byte{}:
				return start + j, false, nil
			}
			probed++
		}
		i = (start + blockSlots) & mask
	}
	return 0, false, fmt.Errorf("the backup's set of items seen: table of %d slots is full", slots)
}

// insert adds k to the shard's table, doubling the table when it is three
// quarters full so probes stay short.
func (sh *seenShard) insert(k [16]byte) (bool, error) {
	slot, found, err := sh.find(sh.file, sh.slots, k)
	if err != nil || found {
		return found, err
	}
	if _, err := sh.file.WriteAt(k[:], int64(slot*slotSize)); err != nil {
		return false, fmt.Errorf("the backup's set of items seen: %w", err)
	}
	sh.used++
	if sh.used*4 > sh.slots*3 {
		return false, sh.grow()
	}
	return false, nil
}

// grow rehashes the table into one twice its size, reading the old one in
// large sequential chunks.
func (sh *seenShard) grow() error {
	old, oldSlots := sh.file, sh.slots
	f, slots, err := newTable(filepath.Dir(old.Name()), 2*oldSlots)
	if err != nil {
		return err
	}
	chunk := make([]byte, 64<<10)
	for off := int64(0); off < int64(oldSlots*slotSize); off += int64(len(chunk)) {
		n, err := old.ReadAt(chunk, off)
		if err != nil && err != io.EOF {
			f.Close()
			os.Remove(f.Name())
			return fmt.Errorf("the backup's set of items seen: %w", err)
		}
		for p := 0; p+slotSize <= n; p += slotSize {
			k := [16]byte(chunk[p:])
			if k == ([16]byte{}) {
				continue
			}
			slot, _, err := sh.find(f, slots, k)
			if err == nil {
				_, err = f.WriteAt(k[:], int64(slot*slotSize))
			}
			if err != nil {
				f.Close()
				os.Remove(f.Name())
				return fmt.Errorf("the backup's set of items seen: %w", err)
			}
		}
	}
	old.Close()
	os.Remove(old.Name())
	sh.file, sh.slots = f, slots
	return nil
}
