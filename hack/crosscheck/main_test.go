package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: a program that calls a function only its Linux file defines
// type-checks for Linux and not for Windows or macOS, the problem naming
// the package and the function; one whose every platform has the function
// type-checks everywhere.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"go.mod":           "module example.com/cross\n\ngo 1.26\n",
		"main.go":          "package main\n\nimport \"example.com/cross/lib\"\n\nfunc main() { lib.Everywhere(); lib.OnlyLinux() }\n",
		"lib/lib.go":       "package lib\n\nfunc Everywhere() {}\n",
		"lib/lib_linux.go": "package lib\n\nfunc OnlyLinux() {}\n",
		"fine/main.go":     "package main\n\nimport \"example.com/cross/lib\"\n\nfunc main() { lib.Everywhere() }\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		goos, goarch, pattern string
		want                  string // "" for no problem
	}{
		{"linux", "arm64", ".", ""},
		{"windows", "amd64", ".", "example.com/cross: "},
		{"darwin", "arm64", ".", "undefined: lib.OnlyLinux"},
		{"windows", "amd64", "./fine", ""},
		{"darwin", "arm64", "./fine", ""},
	} {
		n, problems, err := check(dir, tc.goos, tc.goarch, []string{tc.pattern})
		if err != nil {
			t.Fatalf("%s/%s %s: %v", tc.goos, tc.goarch, tc.pattern, err)
		}
		if n < 2 {
			t.Errorf("%s/%s %s: %d packages checked, want the program and lib", tc.goos, tc.goarch, tc.pattern, n)
		}
		got := strings.Join(problems, "\n")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s/%s %s: problems %q, want %q", tc.goos, tc.goarch, tc.pattern, got, tc.want)
		}
	}
}
