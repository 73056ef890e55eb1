package compat

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/salvor-dev/salvor/internal/plugin/host"
)

var (
	veleroDir string // the Velero-framework plugin
	salvorDir string // Salvor's benchmark plugin
	floorDir  string // grpcfloor, the bare gRPC server
	floorProc *os.Process
)

func here() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// build runs go build in module dir for package pkg, writing out.
func build(dir, pkg, out string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s in %s: %v\n%s", pkg, dir, err, strings.TrimSpace(string(b)))
	}
	return nil
}

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "salvor-compat-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	veleroDir = filepath.Join(tmp, "velero")
	salvorDir = filepath.Join(tmp, "salvor")
	if err := build(filepath.Join(here(), "velero"), "./cmd/veleroplugin", filepath.Join(veleroDir, "veleroplugin")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := build(here(), "./benchplugin", filepath.Join(salvorDir, "benchplugin")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	floorDir = filepath.Join(tmp, "floor")
	if err := build(here(), "./grpcfloor", filepath.Join(floorDir, "grpcfloor")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if floorProc != nil {
		_ = floorProc.Kill()
	}
	for _, mgr := range managers {
		mgr.Close()
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

func manager(tb testing.TB, dir string) *host.Manager {
	tb.Helper()
	m := host.NewManager(host.Options{Logger: slog.New(slog.DiscardHandler)})
	tb.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Discover(ctx, dir); err != nil {
		tb.Fatal(err)
	}
	return m
}
