// Command crosscheck type-checks Go packages, and every package they
// import, for platforms other than the machine's, from source: what `go
// build` for them would refuse — a function only a Linux file defines, a
// syscall field macOS has not, a package that does not build on Windows —
// without compiling all of them again for each platform, which on a fresh
// machine took make test ten minutes a platform. make release builds every
// platform for real.
//
//	go run ./hack/crosscheck -platforms darwin/arm64,windows/amd64 ./cmd/salvor
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/tools/go/packages"
)

func main() {
	platforms := flag.String("platforms", "darwin/arm64,windows/amd64", "GOOS/GOARCH pairs, comma-separated")
	flag.Parse()
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = []string{"./cmd/salvor"}
	}
	failed := false
	for _, p := range strings.Split(*platforms, ",") {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || goos == "" || goarch == "" {
			fmt.Fprintf(os.Stderr, "crosscheck: -platforms %q: want GOOS/GOARCH pairs such as darwin/arm64\n", *platforms)
			os.Exit(2)
		}
		start := time.Now()
		n, problems, err := check("", goos, goarch, patterns)
		if err != nil {
			fmt.Fprintf(os.Stderr, "crosscheck: %s/%s: %v\n", goos, goarch, err)
			os.Exit(1)
		}
		for _, problem := range problems {
			fmt.Fprintf(os.Stderr, "%s/%s: %s\n", goos, goarch, problem)
		}
		if len(problems) > 0 {
			failed = true
			continue
		}
		fmt.Printf("%s builds for %s/%s: %d packages type-checked in %s\n", strings.Join(patterns, " "), goos, goarch, n, time.Since(start).Round(100*time.Millisecond))
	}
	if failed {
		os.Exit(1)
	}
}

// check type-checks patterns (in the module at dir, "" for the current
// directory's) and all they import for goos/goarch with cgo off, as the
// release builds them, and returns how many packages it
// checked and what would not build.
func check(dir, goos, goarch string, patterns []string) (int, []string, error) {
	cfg := &packages.Config{
		// Syntax and the dependencies: every package, function bodies
		// too, is checked from its source, not from export data, which
		// only a compile for the platform writes.
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps |
			packages.NeedTypes | packages.NeedSyntax,
		Env: append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0"),
		Dir: dir,
	}
	roots, err := packages.Load(cfg, patterns...)
	if err != nil {
		return 0, nil, err
	}
	n := 0
	var problems []string
	packages.Visit(roots, nil, func(p *packages.Package) {
		n++
		for _, e := range p.Errors {
			problems = append(problems, fmt.Sprintf("%s: %s", p.PkgPath, e))
		}
	})
	return n, problems, nil
}
