package testbin

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README's layout table is how a newcomer finds their way: every Go
// package of the repository (the compatibility modules under test/compat
// too) has a row of its own, every row names a path that exists, and every
// package says why it exists in a package comment, except the protobuf
// code generated into pkg/plugin/proto (the generator empties it).
func TestReadmeLayoutListsEveryPackage(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	rows := layoutRows(t, filepath.Join(root, "README.md"))
	if len(rows) == 0 {
		t.Fatal("README.md has no layout table (a table under \"## Layout\" whose first column is a path)")
	}
	for _, r := range rows {
		if _, err := os.Stat(filepath.Join(root, r)); err != nil {
			t.Errorf("README's layout table lists %s, which does not exist", r)
		}
	}
	packages := goPackages(t, root)
	if len(packages) < 20 {
		t.Fatalf("found only %d Go packages under %s: %v", len(packages), root, packages)
	}
	for _, p := range packages {
		if !slices.Contains(rows, p+"/") {
			t.Errorf("package %s/ has no row in README's layout table", p)
		}
		if !strings.HasPrefix(p, "pkg/plugin/proto/") && !hasPackageDoc(t, filepath.Join(root, p)) {
			t.Errorf("package %s has no package comment saying why it exists (put one in its doc.go)", p)
		}
	}
}

var layoutPath = regexp.MustCompile("^\\| `([^`]+)` \\|")

// layoutRows returns the paths in the first column of the table under the
// README's "## Layout" heading.
func layoutRows(t *testing.T, readme string) []string {
	t.Helper()
	f, err := os.Open(readme)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Layout"
			continue
		}
		if m := layoutPath.FindStringSubmatch(line); in && m != nil {
			rows = append(rows, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// goPackages returns the directories (relative, slash-separated) that hold
// Go files, leaving out what Go itself leaves out: testdata, and
// directories whose names start with "." or "_"; and bin/, where the
// build puts its tools.
func goPackages(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || rel == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && filepath.Dir(rel) != "." {
			seen[filepath.ToSlash(filepath.Dir(rel))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func hasPackageDoc(t *testing.T, dir string) bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			return true
		}
	}
	return false
}
