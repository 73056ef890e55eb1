package testbin

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	return out, build(map[string]string{pkg: out}, Options{})
}

// BuildAll compiles the packages pkgs, as Build does, into dir, each named
// for the last element of its path, in one go build: their links run at
// once.
func BuildAll(dir string, pkgs ...string) error {
	return BuildAllWith(dir, Options{}, pkgs...)
}

// Options are what a build sets beyond go's defaults.
type Options struct {
	// GOOS and GOARCH are the platform built for (empty: the
	// environment's, else this machine's).
	GOOS, GOARCH string
	// LDFlags are go build's -ldflags (make image's strip the binaries
	// and set the version they say).
	LDFlags string
}

// BuildAllWith is BuildAll with opt.
func BuildAllWith(dir string, opt Options, pkgs ...string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	outs := map[string]string{}
	for _, pkg := range pkgs {
		outs[pkg] = filepath.Join(dir, path.Base(pkg))
	}
	return build(outs, opt)
}

// build links each package of outs (package -> where its binary goes) in
// one go build into bin/testbin/<settings>/ under the module root, and
// copies the binaries from there. go build relinks a binary there only
// when its build ID says it is out of date, so the test packages and the
// end-to-end tests that build salvor or the same plugin, at once or run
// after run, link it once: each link of salvor is seconds of CPU. The
// directory is locked while a build and its copies run: test binaries
// build at once, and go build replaces its outputs in place. The
// callers get copies, never links: a test may change its binary.
func build(outs map[string]string, opt Options) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	goos, goarch := cmp.Or(opt.GOOS, os.Getenv("GOOS")), cmp.Or(opt.GOARCH, os.Getenv("GOARCH"))
	// Other settings (GOFLAGS's -race under hack/race.sh, a platform, link
	// flags) make other binaries: they live apart rather than relink each
	// other's.
	settings := sha256.Sum256([]byte(strings.Join([]string{os.Getenv("GOFLAGS"), os.Getenv("CGO_ENABLED"), goos, goarch, opt.LDFlags}, "\x00")))
	shared := filepath.Join(root, "bin", "testbin", hex.EncodeToString(settings[:6]))
	if err := os.MkdirAll(shared, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(shared, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", shared, err)
	}
	pkgs := slices.Sorted(maps.Keys(outs))
	args := []string{"build", "-o", shared + string(filepath.Separator)}
	if opt.LDFlags != "" {
		args = append(args, "-ldflags="+opt.LDFlags)
	}
	cmd := exec.Command("go", append(args, pkgs...)...)
	cmd.Dir = root
	cmd.Env = os.Environ()
	if goos != "" {
		cmd.Env = append(cmd.Env, "GOOS="+goos)
	}
	if goarch != "" {
		cmd.Env = append(cmd.Env, "GOARCH="+goarch)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %v\n%s", strings.Join(pkgs, " "), err, strings.TrimSpace(string(b)))
	}
	for _, pkg := range pkgs {
		if err := copyFile(filepath.Join(shared, path.Base(pkg)), outs[pkg]); err != nil {
			return fmt.Errorf("building %s: %w", pkg, err)
		}
	}
	return nil
}

// copyFile copies the executable from to to.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
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
