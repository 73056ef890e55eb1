package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
