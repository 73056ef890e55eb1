package testbin

import (
	"bufio"
	"go/build/constraint"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goarches are the architectures Go builds for (`go tool dist list`).
var goarches = []string{"386", "amd64", "arm", "arm64", "loong64", "mips", "mipsle", "mips64", "mips64le",
	"ppc64", "ppc64le", "riscv64", "s390x", "wasm"}

// TestNoArchitectureSpecificCode keeps the Makefile's cross target honest:
// it builds one architecture per OS because Salvor's own code differs by
// OS only. A file named for an architecture (x_arm64.go) or built by one
// (//go:build amd64) would need its architecture built too.
func TestNoArchitectureSpecificCode(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "bin", "testdata", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		parts := strings.Split(strings.TrimSuffix(strings.TrimSuffix(d.Name(), ".go"), "_test"), "_")
		for _, arch := range goarches {
			if len(parts) > 1 && parts[len(parts)-1] == arch {
				t.Errorf("%s is built for %s only: add %s to CROSS in the Makefile, or make it architecture-free", rel, arch, arch)
			}
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "package ") {
				break
			}
			if !constraint.IsGoBuild(line) {
				continue
			}
			expr, err := constraint.Parse(line)
			if err != nil {
				t.Errorf("%s: %v", rel, err)
				break
			}
			expr.Eval(func(tag string) bool {
				for _, arch := range goarches {
					if tag == arch {
						t.Errorf("%s has a build constraint on %s (%s): add it to CROSS in the Makefile, or make the file architecture-free", rel, arch, line)
					}
				}
				return true
			})
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}
