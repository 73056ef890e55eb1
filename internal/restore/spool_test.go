package restore

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/salvor-dev/salvor/internal/archive"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

type spooled struct {
	tier     int
	gr       schema.GroupResource
	ns, name string
	selected bool
	body     string
}

func newTestSpool(t *testing.T, tiers int, items []spooled) *spool {
	t.Helper()
	s, err := newSpool(t.TempDir(), tiers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	for _, it := range items {
		if err := s.add(it.tier, it.gr, "v1", it.ns, it.name, it.selected, []byte(it.body)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestSpool(t *testing.T) {
	cm := schema.GroupResource{Resource: "configmaps"}
	ns := schema.GroupResource{Resource: "namespaces"}
	widgets := schema.GroupResource{Group: "example.io", Resource: "widgets"}
	items := []spooled{
		{0, ns, "", "shop", true, `{"n":1}`},
		{1, cm, "shop", "a", true, `{"n":2}`},
		{1, cm, "shop", "b", false, `{"n":3}`},
		{2, widgets, "shop", "a", true, `{"n":4}`},
		{1, cm, "shop", "a", false, `{"n":5}`}, // replaces the first copy of shop/a
		{1, cm, "", "", true, `{}`},
	}
	s := newTestSpool(t, 3, items)
	replaced, err := s.seal()
	if err != nil {
		t.Fatal(err)
	}
	if replaced != 1 {
		t.Errorf("replaced selected copies: %d, want 1", replaced)
	}

	for _, tc := range []struct {
		gr       schema.GroupResource
		ns, name string
		body     string
		selected bool
	}{
		{ns, "", "shop", `{"n":1}`, true},
		{cm, "shop", "a", `{"n":5}`, false},
		{cm, "shop", "b", `{"n":3}`, false},
		{widgets, "shop", "a", `{"n":4}`, true},
		{cm, "", "", `{}`, true},
	} {
		l, ok, err := s.find(key(tc.gr, tc.ns, tc.name))
		if err != nil || !ok {
			t.Fatalf("%s %s/%s: found %v, %v", tc.gr, tc.ns, tc.name, ok, err)
		}
		it, err := s.load(l)
		if err != nil {
			t.Fatal(err)
		}
		if it.kind.gr != tc.gr || it.kind.apiVersion != "v1" || it.namespace != tc.ns || it.name != tc.name || string(it.body) != tc.body || it.selected != tc.selected {
			t.Errorf("%s %s/%s: read back %+v (body %s)", tc.gr, tc.ns, tc.name, it, it.body)
		}
		if l.done {
			t.Errorf("%s %s/%s is done before anything was restored", tc.gr, tc.ns, tc.name)
		}
	}
	if _, ok, err := s.find(key(cm, "shop", "c")); ok || err != nil {
		t.Errorf("an item not in the backup: found %v, %v", ok, err)
	}

	// Each tier is read back in the order written, replaced copies included.
	for tier, want := range [][]string{{`{"n":1}`}, {`{"n":2}`, `{"n":3}`, `{"n":5}`, `{}`}, {`{"n":4}`}} {
		var got []string
		if err := s.each(tier, func(it *entry) error { got = append(got, string(it.body)); return nil }); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("tier %d: %v, want %v", tier, got, want)
		}
	}

	l, _, _ := s.find(key(widgets, "shop", "a"))
	if err := s.markDone(l); err != nil {
		t.Fatal(err)
	}
	if l, _, _ := s.find(key(widgets, "shop", "a")); !l.done || !l.selected {
		t.Errorf("after markDone: %+v", l)
	}
	if l, _, _ := s.find(key(cm, "shop", "a")); l.done {
		t.Errorf("markDone marked another item: %+v", l)
	}
}

// TestSpoolFull fills the table to its bound and finds every item.
func TestSpoolFull(t *testing.T) {
	var items []spooled
	for i := range 5000 {
		items = append(items, spooled{i % 2, schema.GroupResource{Resource: "secrets"}, fmt.Sprintf("ns-%d", i%7), fmt.Sprintf("s-%d", i), i%3 == 0, fmt.Sprint(i)})
	}
	s := newTestSpool(t, 2, items)
	if _, err := s.seal(); err != nil {
		t.Fatal(err)
	}
	if s.slots < 2*uint64(len(items)) {
		t.Errorf("%d slots for %d items: more than half full", s.slots, len(items))
	}
	for _, it := range items {
		l, ok, err := s.find(key(it.gr, it.ns, it.name))
		if err != nil || !ok {
			t.Fatalf("%s/%s: %v %v", it.ns, it.name, ok, err)
		}
		got, err := s.load(l)
		if err != nil || string(got.body) != it.body || got.selected != it.selected {
			t.Fatalf("%s/%s: %+v %v", it.ns, it.name, got, err)
		}
	}
}

func TestSpoolRejectsOverlongNames(t *testing.T) {
	s := newTestSpool(t, 1, nil)
	long := string(make([]byte, 1<<16))
	if err := s.add(0, schema.GroupResource{Resource: "configmaps"}, "v1", "ns", long, true, nil); err == nil {
		t.Error("a 64 KiB name was spooled")
	}
}

// TestClaim checks the rules restoring an item once follows: the first
// worker restores it; one asking while it runs waits for it, unless the
// asker is what the item waits for (a cycle of additional items), which
// would never end.
func TestClaim(t *testing.T) {
	cm := schema.GroupResource{Resource: "configmaps"}
	s := newTestSpool(t, 1, []spooled{
		{0, cm, "a", "x", true, `{}`},
		{0, cm, "a", "y", true, `{}`},
		{0, cm, "a", "old", true, `{"copy":1}`},
		{0, cm, "a", "old", true, `{"copy":2}`},
	})
	if _, err := s.seal(); err != nil {
		t.Fatal(err)
	}
	r := &run{spool: s, flights: map[itemKey]*flight{}}
	read := map[string]*entry{}
	if err := s.each(0, func(it *entry) error {
		read[it.name+string(it.body)] = it
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	x, y := read["x{}"], read["y{}"]
	ctx := context.Background()
	w1, w2, w3 := &worker{}, &worker{}, &worker{}

	claim := func(it *entry, w *worker) *flight {
		t.Helper()
		f, err := r.claim(ctx, it, w)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if claim(read[`old{"copy":1}`], w1) != nil {
		t.Error("a copy that a later one replaced was claimed")
	}
	fx := claim(x, w1)
	if fx == nil {
		t.Fatal("the first claim of x was refused")
	}
	if claim(x, w1) != nil {
		t.Error("x claimed twice by the worker restoring it")
	}
	fy := claim(y, w2)
	if fy == nil {
		t.Fatal("the first claim of y was refused")
	}

	// w1, restoring x, asks for y: it waits for w2 to land y.
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		if claim(y, w1) != nil {
			t.Error("y claimed again while w2 restores it")
		}
	}()
	waiting := func() (bool, error) {
		r.fmu.Lock()
		defer r.fmu.Unlock()
		return w1.waiting == fy, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return waiting() }); err != nil {
		t.Fatal("w1 never waited for y")
	}
	// w2, restoring y, now asks for x, which waits for y: waiting would
	// never end, so w2 goes on without it.
	if claim(x, w2) != nil {
		t.Error("x claimed by w2 while w1 restores it")
	}
	select {
	case <-waited:
		t.Fatal("w1 stopped waiting before y landed")
	default:
	}
	if err := r.land(fy); err != nil {
		t.Fatal(err)
	}
	<-waited
	// w3 asks for x while w1 (no longer waiting) restores it: it waits.
	w3done := make(chan *flight)
	go func() { f, _ := r.claim(ctx, x, w3); w3done <- f }()
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		r.fmu.Lock()
		defer r.fmu.Unlock()
		return w3.waiting == fx, nil
	}); err != nil {
		t.Fatal("w3 never waited for x")
	}
	if err := r.land(fx); err != nil {
		t.Fatal(err)
	}
	if f := <-w3done; f != nil {
		t.Error("x claimed after it landed")
	}
	if claim(x, w2) != nil || claim(y, w3) != nil {
		t.Error("an item restored already was claimed")
	}
}

// BenchmarkRead measures the first phase of a restore, before anything is
// created: checking a tarball of 10,000 ConfigMaps of about 1 KiB and
// spooling it.
func BenchmarkRead(b *testing.B) {
	const n = 10000
	var tarball bytes.Buffer
	w, err := archive.NewWriter(&tarball)
	if err != nil {
		b.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for i := range n {
		ns, name := fmt.Sprintf("ns-%d", i%10), fmt.Sprintf("cm-%07d", i)
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q,"uid":"%08d","resourceVersion":"%d","labels":{"app":"bench"}},"data":{"payload":%q}}`,
			name, ns, i, i, strings.Repeat("x", 900))
		if err := w.WriteItem(gvr, ns, name, []byte(body)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(tarball.Len()))
	for b.Loop() {
		s, err := newSpool(b.TempDir(), newOrder(DefaultTiers).count())
		if err != nil {
			b.Fatal(err)
		}
		r := &run{restore: &salvorv1.Restore{}, spool: s, tiers: newOrder(DefaultTiers),
			namespaces: map[string]bool{}, nsItems: map[string]bool{}, held: map[string]bool{}, candidates: map[string]string{}, needed: map[string]string{}}
		sel, err := newSelection(&r.restore.Spec, nil)
		if err != nil {
			b.Fatal(err)
		}
		r.sel.Store(sel)
		if err := r.read(bytes.NewReader(tarball.Bytes())); err != nil {
			b.Fatal(err)
		}
		if r.total.Load() != n {
			b.Fatalf("%d items selected, want %d", r.total.Load(), n)
		}
		s.close()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "items/s")
}
