package restore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/zeebo/xxh3"
)

// The spool keeps a restore's copy of the backup on disk, so that the
// restore's memory does not grow with the number of items: one file of
// framed items per tier, read front to back when the tier is restored, and
// a hash table from an item's key to its frame for the items plugins ask
// for by name. What stays in memory is one small record per resource kind
// and per namespace.
//
// A frame is a 12-byte header — kind (uint16), flags (uint8), a spare
// byte, namespace length (uint16), name length (uint16), body length
// (uint32), little-endian — then the namespace, the name and the item's
// JSON.
//
// A table slot is 32 bytes: the item's 128-bit key, the frame's offset
// (uint64) and length (uint32) in its tier's file, the tier (uint16),
// slot flags (uint8) and a spare byte. The table is open-addressed with
// linear probing and at most half full.
const (
	frameHeader = 12
	slotSize    = 32

	frameSelected = 1 << 0

	slotUsed     = 1 << 0
	slotDone     = 1 << 1
	slotSelected = 1 << 2
	// slotFlagsAt is where a slot's flags byte sits.
	slotFlagsAt = 30
)

// itemKey finds an item: a 128-bit hash of its resource, namespace and
// name, instead of the strings.
type itemKey [16]byte

func key(gr schema.GroupResource, ns, name string) itemKey {
	return itemKey(xxh3.HashString128(gr.Group + "\x00" + gr.Resource + "\x00" + ns + "\x00" + name).Bytes())
}

// itemKind is what items of one resource and version share.
type itemKind struct {
	gr         schema.GroupResource
	apiVersion string
}

// entry is one item read back from the spool.
type entry struct {
	kind      *itemKind
	namespace string // in the backup
	name      string
	selected  bool
	body      []byte
	// tier and offset place the frame, which tells a copy of an item
	// apart from a later copy in the tarball that replaced it.
	tier   int
	offset int64
}

func (it *entry) key() itemKey { return key(it.kind.gr, it.namespace, it.name) }

// location is where an item's frame is, as the table holds it.
type location struct {
	tier     int
	offset   int64
	length   int
	slot     uint64
	selected bool
	done     bool
}

type tierFile struct {
	f   *os.File
	w   *bufio.Writer
	end int64
}

type spool struct {
	tiers   []tierFile
	kinds   []*itemKind
	kindIDs map[itemKind]uint16
	// locations holds a slot for every frame written, in order, until
	// seal builds the table from them.
	locations *os.File
	locW      *bufio.Writer
	frames    int
	table     *os.File
	slots     uint64
}

func newSpool(dir string, tiers int) (*spool, error) {
	s := &spool{kindIDs: map[itemKind]uint16{}}
	for i := range tiers {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("tier-%02d", i)))
		if err != nil {
			s.close()
			return nil, err
		}
		s.tiers = append(s.tiers, tierFile{f: f, w: bufio.NewWriterSize(f, 32<<10)})
	}
	var err error
	if s.locations, err = os.Create(filepath.Join(dir, "locations")); err != nil {
		s.close()
		return nil, err
	}
	s.locW = bufio.NewWriterSize(s.locations, 64<<10)
	if s.table, err = os.Create(filepath.Join(dir, "table")); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *spool) close() {
	for _, t := range s.tiers {
		t.f.Close()
	}
	for _, f := range []*os.File{s.locations, s.table} {
		if f != nil {
			f.Close()
		}
	}
}

// kind returns the shared record for a resource and version.
func (s *spool) kind(gr schema.GroupResource, apiVersion string) (uint16, error) {
	k := itemKind{gr: gr, apiVersion: apiVersion}
	if id, ok := s.kindIDs[k]; ok {
		return id, nil
	}
	if len(s.kinds) == 1<<16 {
		return 0, errors.New("more than 65,536 resource kinds and versions")
	}
	id := uint16(len(s.kinds))
	s.kinds = append(s.kinds, &k)
	s.kindIDs[k] = id
	return id, nil
}

// add writes an item to its tier's file.
func (s *spool) add(tier int, gr schema.GroupResource, apiVersion, ns, name string, selected bool, body []byte) error {
	kind, err := s.kind(gr, apiVersion)
	if err != nil {
		return err
	}
	if len(ns) > 1<<16-1 || len(name) > 1<<16-1 {
		return fmt.Errorf("%s %s/%s: namespace or name longer than 65,535 bytes", gr, ns, name)
	}
	var h [frameHeader]byte
	binary.LittleEndian.PutUint16(h[0:], kind)
	if selected {
		h[2] = frameSelected
	}
	binary.LittleEndian.PutUint16(h[4:], uint16(len(ns)))
	binary.LittleEndian.PutUint16(h[6:], uint16(len(name)))
	binary.LittleEndian.PutUint32(h[8:], uint32(len(body)))
	t := &s.tiers[tier]
	for _, b := range [][]byte{h[:], []byte(ns), []byte(name), body} {
		if _, err := t.w.Write(b); err != nil {
			return err
		}
	}
	length := frameHeader + len(ns) + len(name) + len(body)
	slot := encodeSlot(key(gr, ns, name), location{tier: tier, offset: t.end, length: length, selected: selected})
	t.end += int64(length)
	s.frames++
	_, err = s.locW.Write(slot[:])
	return err
}

func encodeSlot(k itemKey, l location) [slotSize]byte {
	var b [slotSize]byte
	copy(b[:16], k[:])
	binary.LittleEndian.PutUint64(b[16:], uint64(l.offset))
	binary.LittleEndian.PutUint32(b[24:], uint32(l.length))
	binary.LittleEndian.PutUint16(b[28:], uint16(l.tier))
	b[slotFlagsAt] = slotUsed
	if l.done {
		b[slotFlagsAt] |= slotDone
	}
	if l.selected {
		b[slotFlagsAt] |= slotSelected
	}
	return b
}

func decodeSlot(b []byte) (itemKey, location, bool) {
	var k itemKey
	copy(k[:], b[:16])
	l := location{
		offset:   int64(binary.LittleEndian.Uint64(b[16:])),
		length:   int(binary.LittleEndian.Uint32(b[24:])),
		tier:     int(binary.LittleEndian.Uint16(b[28:])),
		done:     b[slotFlagsAt]&slotDone != 0,
		selected: b[slotFlagsAt]&slotSelected != 0,
	}
	return k, l, b[slotFlagsAt]&slotUsed != 0
}

// seal ends writing and builds the table; a later copy of an item in the
// tarball replaces an earlier one. It returns how many of the replaced
// copies were selected.
func (s *spool) seal() (replacedSelected int, err error) {
	for i := range s.tiers {
		if err := s.tiers[i].w.Flush(); err != nil {
			return 0, err
		}
		s.tiers[i].w = nil
	}
	if err := s.locW.Flush(); err != nil {
		return 0, err
	}
	s.locW = nil
	s.slots = 1 << bits.Len64(uint64(2*s.frames))
	if err := s.table.Truncate(int64(s.slots * slotSize)); err != nil {
		return 0, err
	}
	in := bufio.NewReaderSize(io.NewSectionReader(s.locations, 0, int64(s.frames)*slotSize), 64<<10)
	var b [slotSize]byte
	for range s.frames {
		if _, err := io.ReadFull(in, b[:]); err != nil {
			return 0, fmt.Errorf("reading the spool's locations: %w", err)
		}
		k, _, _ := decodeSlot(b[:])
		slot, old, found, err := s.probe(k)
		if err != nil {
			return 0, err
		}
		if found && old.selected {
			replacedSelected++
		}
		if _, err := s.table.WriteAt(b[:], int64(slot*slotSize)); err != nil {
			return 0, err
		}
	}
	return replacedSelected, nil
}

// probe finds k's slot, or the free slot it would take.
func (s *spool) probe(k itemKey) (slot uint64, l location, found bool, err error) {
	var b [slotSize]byte
	slot = binary.LittleEndian.Uint64(k[:8]) & (s.slots - 1)
	for {
		if _, err := s.table.ReadAt(b[:], int64(slot*slotSize)); err != nil {
			return 0, location{}, false, fmt.Errorf("reading the spool's table: %w", err)
		}
		got, l, used := decodeSlot(b[:])
		if !used {
			return slot, location{}, false, nil
		}
		if got == k {
			l.slot = slot
			return slot, l, true, nil
		}
		slot = (slot + 1) & (s.slots - 1)
	}
}

// find returns where item k is, if the backup holds it.
func (s *spool) find(k itemKey) (location, bool, error) {
	_, l, ok, err := s.probe(k)
	return l, ok, err
}

// markDone records in k's slot that the item was restored.
func (s *spool) markDone(l location) error {
	l.done = true
	b := encodeSlot(itemKey{}, l)
	_, err := s.table.WriteAt(b[slotFlagsAt:slotFlagsAt+1], int64(l.slot*slotSize+slotFlagsAt))
	return err
}

// load reads the item at l.
func (s *spool) load(l location) (*entry, error) {
	buf := make([]byte, l.length)
	if _, err := s.tiers[l.tier].f.ReadAt(buf, l.offset); err != nil {
		return nil, fmt.Errorf("reading the spool: %w", err)
	}
	return s.decode(buf, l.tier, l.offset)
}

func (s *spool) decode(frame []byte, tier int, offset int64) (*entry, error) {
	if len(frame) < frameHeader {
		return nil, errors.New("spool frame cut short")
	}
	kind := int(binary.LittleEndian.Uint16(frame[0:]))
	nsLen, nameLen := int(binary.LittleEndian.Uint16(frame[4:])), int(binary.LittleEndian.Uint16(frame[6:]))
	bodyLen := int(binary.LittleEndian.Uint32(frame[8:]))
	if kind >= len(s.kinds) || len(frame) != frameHeader+nsLen+nameLen+bodyLen {
		return nil, errors.New("spool frame damaged")
	}
	rest := frame[frameHeader:]
	return &entry{kind: s.kinds[kind], namespace: string(rest[:nsLen]), name: string(rest[nsLen : nsLen+nameLen]),
		selected: frame[2]&frameSelected != 0, body: rest[nsLen+nameLen:], tier: tier, offset: offset}, nil
}

// each calls fn for every item in a tier's file, in the order written.
func (s *spool) each(tier int, fn func(*entry) error) error {
	in := bufio.NewReaderSize(io.NewSectionReader(s.tiers[tier].f, 0, s.tiers[tier].end), 64<<10)
	var offset int64
	for offset < s.tiers[tier].end {
		var h [frameHeader]byte
		if _, err := io.ReadFull(in, h[:]); err != nil {
			return fmt.Errorf("reading the spool: %w", err)
		}
		n := frameHeader + int(binary.LittleEndian.Uint16(h[4:])) + int(binary.LittleEndian.Uint16(h[6:])) + int(binary.LittleEndian.Uint32(h[8:]))
		frame := make([]byte, n)
		copy(frame, h[:])
		if _, err := io.ReadFull(in, frame[frameHeader:]); err != nil {
			return fmt.Errorf("reading the spool: %w", err)
		}
		it, err := s.decode(frame, tier, offset)
		if err != nil {
			return err
		}
		offset += int64(n)
		if err := fn(it); err != nil {
			return err
		}
	}
	return nil
}
