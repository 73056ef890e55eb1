package plugintest

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/salvor-dev/salvor/internal/plugin/host"
)

// Start builds the plugin's main package pkg (as `go build` takes it,
// relative to the test's working directory: "." for the package under test)
// and returns a Manager that has discovered it. The Manager, its plugin
// processes and the binary go away when the test ends.
func Start(t testing.TB, pkg string, opts Options) *Manager {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "plugin")
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("plugintest: building %s: %v\n%s", pkg, err, strings.TrimSpace(string(b)))
	}
	m := host.NewManager(opts)
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Discover(ctx, dir); err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	return m
}
