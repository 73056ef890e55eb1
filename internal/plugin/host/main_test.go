package host

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/salvor-dev/salvor/internal/testbin"
)

// pluginDir holds the test plugin binary, built once for all tests.
var pluginDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "salvor-host-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginDir = filepath.Join(dir, "plugins")
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if _, err := testbin.Build(pluginDir, "testplugin", "./internal/plugin/host/testdata/testplugin"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// records collects log records so tests can look at what plugins logged.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}
func (r *records) WithAttrs(as []slog.Attr) slog.Handler { return &withAttrs{r, as} }
func (r *records) WithGroup(string) slog.Handler         { return r }

type withAttrs struct {
	*records
	attrs []slog.Attr
}

func (w *withAttrs) Handle(ctx context.Context, rec slog.Record) error {
	rec = rec.Clone()
	rec.AddAttrs(w.attrs...)
	return w.records.Handle(ctx, rec)
}

func (w *withAttrs) WithAttrs(as []slog.Attr) slog.Handler {
	return &withAttrs{w.records, append(append([]slog.Attr{}, w.attrs...), as...)}
}

// find returns the first record whose message is msg, and its attributes.
func (r *records) find(msg string) (slog.Record, map[string]string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.recs {
		if rec.Message == msg {
			attrs := map[string]string{}
			rec.Attrs(func(a slog.Attr) bool {
				attrs[a.Key] = a.Value.String()
				return true
			})
			return rec, attrs, true
		}
	}
	return slog.Record{}, nil, false
}

// newManager discovers the test plugin with the given options.
func newManager(t *testing.T, opts Options) (*Manager, *records) {
	t.Helper()
	logs := &records{}
	if opts.Logger == nil {
		opts.Logger = slog.New(logs)
	}
	if opts.Grace == 0 {
		opts.Grace = 2 * time.Second
	}
	m := NewManager(opts)
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Discover(ctx, pluginDir); err != nil {
		t.Fatalf("Discover: %v", err)
	}
	return m, logs
}

func testBinary() string { return filepath.Join(pluginDir, "testplugin") }
