package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// ModuleRoot returns the directory holding Salvor's go.mod.
func ModuleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("testbin: cannot find its own source file")
	}
	return filepath.Abs(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Build compiles the package pkg (a path relative to the module root, such
// as "./examples/async-backup-action") to dir/name and returns its path.
func Build(dir, name, pkg string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = os.Environ()
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", pkg, err, strings.TrimSpace(string(b)))
	}
	return out, nil
}

// EnvCount reads a positive number from the environment variable name (a
// benchmark's size), or gives def when it is not set; anything else fails
// t, naming the variable.
func EnvCount(t interface{ Fatalf(string, ...any) }, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}
