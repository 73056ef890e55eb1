package backup

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
)

// ResourceList collects the names of a backup's items by resource
// ("v1/ConfigMap" → "ns/name", …) for the layout's resource list, which
// names every item. Up to listMemoryEntries names it keeps them in memory;
// then it sorts them and writes them out as a run in the backup's scratch
// directory, and WriteJSON merges the runs, so its memory stays the same
// whatever the backup's size. Names come out sorted within each resource,
// resources in order.
type ResourceList struct {
	dir string // "" keeps everything in memory
	// budget is how many names are kept in memory; 0 means listMemoryEntries.
	budget int

	mu      sync.Mutex
	pending []listEntry
	runs    []string
}

const listMemoryEntries = 8 << 10

type listEntry struct{ resource, name string }

func compareEntries(a, b listEntry) int {
	return cmp.Or(strings.Compare(a.resource, b.resource), strings.Compare(a.name, b.name))
}

// NewResourceList returns an empty list that spills into dir (none: "").
func NewResourceList(dir string) *ResourceList { return &ResourceList{dir: dir} }

// Add records one item's name under its resource.
func (l *ResourceList) Add(resource, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = append(l.pending, listEntry{resource, name})
	if len(l.pending) >= cmp.Or(l.budget, listMemoryEntries) && l.dir != "" {
		return l.spill()
	}
	return nil
}

// spill writes the pending names, sorted, as a run: one line each, the
// resource and the name split by a NUL (neither holds one, nor a newline).
func (l *ResourceList) spill() error {
	slices.SortFunc(l.pending, compareEntries)
	f, err := os.CreateTemp(l.dir, "resource-list-")
	if err != nil {
		return fmt.Errorf("the backup's resource list: %w", err)
	}
	w := bufio.NewWriter(f)
	for _, e := range l.pending {
		w.WriteString(e.resource)
		w.WriteByte(0)
		w.WriteString(e.name)
		w.WriteByte('\n')
	}
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	l.runs = append(l.runs, f.Name())
	if err != nil {
		return fmt.Errorf("the backup's resource list: %w", err)
	}
	l.pending = l.pending[:0]
	return nil
}

// source is one sorted run being merged.
type source struct {
	next func() (listEntry, bool, error)
	head listEntry
}

type merge []*source

func (m merge) Len() int           { return len(m) }
func (m merge) Less(i, j int) bool { return compareEntries(m[i].head, m[j].head) < 0 }
func (m merge) Swap(i, j int)      { m[i], m[j] = m[j], m[i] }
func (m *merge) Push(x any)        { *m = append(*m, x.(*source)) }
func (m *merge) Pop() any {
	old := *m
	s := old[len(old)-1]
	*m = old[:len(old)-1]
	return s
}

// WriteJSON writes the list as the layout's JSON object, merging the runs.
func (l *ResourceList) WriteJSON(w io.Writer) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	slices.SortFunc(l.pending, compareEntries)
	var sources merge
	pending := l.pending
	sources = append(sources, &source{next: func() (listEntry, bool, error) {
		if len(pending) == 0 {
			return listEntry{}, false, nil
		}
		e := pending[0]
		pending = pending[1:]
		return e, true, nil
	}})
	for _, run := range l.runs {
		f, err := os.Open(run)
		if err != nil {
			return fmt.Errorf("the backup's resource list: %w", err)
		}
		defer f.Close()
		r := bufio.NewReader(f)
		sources = append(sources, &source{next: func() (listEntry, bool, error) {
			line, err := r.ReadString('\n')
			if err == io.EOF && line == "" {
				return listEntry{}, false, nil
			}
			if err != nil {
				return listEntry{}, false, fmt.Errorf("the backup's resource list: %w", err)
			}
			resource, name, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\x00")
			return listEntry{resource, name}, true, nil
		}})
	}
	live := sources[:0]
	for _, s := range sources {
		e, ok, err := s.next()
		if err != nil {
			return err
		}
		if ok {
			s.head = e
			live = append(live, s)
		}
	}
	heap.Init(&live)
	bw := bufio.NewWriter(w)
	bw.WriteByte('{')
	current := ""
	first := true
	for live.Len() > 0 {
		s := live[0]
		e := s.head
		if first || e.resource != current {
			if !first {
				bw.WriteString("],")
			}
			writeString(bw, e.resource)
			bw.WriteString(":[")
			current, first = e.resource, false
		} else {
			bw.WriteByte(',')
		}
		writeString(bw, e.name)
		next, ok, err := s.next()
		if err != nil {
			return err
		}
		if ok {
			s.head = next
			heap.Fix(&live, 0)
		} else {
			heap.Pop(&live)
		}
	}
	if !first {
		bw.WriteByte(']')
	}
	bw.WriteByte('}')
	return bw.Flush()
}

func writeString(w *bufio.Writer, s string) {
	b, _ := json.Marshal(s) // a string always encodes
	w.Write(b)
}

// Map reads the whole list into memory (for tests and small lists).
func (l *ResourceList) Map() (map[string][]string, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(l.WriteJSON(pw)) }()
	out := map[string][]string{}
	err := json.NewDecoder(pr).Decode(&out)
	pr.CloseWithError(io.EOF)
	return out, err
}

// Close removes the runs.
func (l *ResourceList) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, run := range l.runs {
		os.Remove(run)
	}
	l.runs, l.pending = nil, nil
}
