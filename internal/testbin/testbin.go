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
// It builds with go's default settings (GOFLAGS, hack/race.sh's -race,
// included), as go vet, the end-to-end test binary and the testbed's
// kube-apiserver and etcd are compiled: -trimpath or CGO_ENABLED=0 would
// compile every package the binaries import once more, which on a fresh
// machine cost make test minutes of its 2 cores. The release builds'
// settings (static, -trimpath) are make cross's and make image's.
func Build(dir, name, pkg string) (string, error) {
	out := filepath.Join(dir, name)
	return out, build(out, pkg)
}

// BuildAll compiles the packages pkgs, as Build does, into dir, each named
// for the last element of its path, in one go build: their links run at
// once.
func BuildAll(dir string, pkgs ...string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return build(dir+string(filepath.Separator), pkgs...)
}

// build runs go build -o out for pkgs in the module root.
func build(out string, pkgs ...string) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", append([]string{"build", "-o", out}, pkgs...)...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %v\n%s", strings.Join(pkgs, " "), err, strings.TrimSpace(string(b)))
	}
	return nil
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

// KopiaCLI builds kopia's command at the version Salvor's go.mod requires,
// into bin/kopia-<version> (kept between runs), from a module of its own
// so Salvor's module needs none of the CLI's dependencies, and returns its
// path: the benchmarks compare Salvor's copies with it.
func KopiaCLI() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	out, err := exec.Command("go", "-C", root, "list", "-m", "-f", "{{.Version}}", "github.com/kopia/kopia").Output()
	if err != nil {
		return "", fmt.Errorf("kopia's version: %v", err)
	}
	version := strings.TrimSpace(string(out))
	bin := filepath.Join(root, "bin", "kopia-"+version)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	mod, err := os.MkdirTemp("", "kopiacli-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(mod)
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module kopiacli\n\ngo 1.25\n\nrequire github.com/kopia/kopia "+version+"\n"), 0o644); err != nil {
		return "", err
	}
	build := exec.Command("go", "build", "-mod=mod", "-o", bin, "github.com/kopia/kopia")
	build.Dir = mod
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building kopia's CLI %s: %v\n%s", version, err, out)
	}
	return bin, nil
}
