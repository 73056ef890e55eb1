package plugintest

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
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

// StartInProcess serves srv's plugins from the test's own process (no
// binary is built) and returns a Manager that calls them through Salvor's
// host over the plugin protocol, as Start's does: deadlines, error
// reporting and the SDK's interceptors are the same, and a test may share
// memory with the plugin or stop in it under a debugger. What only a
// process shows needs Start: a plugin that crashes takes the test with it,
// and one that hangs past its deadline has its server stopped (the next
// call gets a new one) but keeps its goroutine.
func StartInProcess(t testing.TB, srv *sdk.Server, opts Options) *Manager {
	t.Helper()
	m := host.NewManager(opts)
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Add(ctx, host.Command{Path: "in-process:" + t.Name(), InProcess: srv.ServeInProcess}); err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	return m
}
