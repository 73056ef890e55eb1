// Command genchart writes the Helm chart's generated files (its CRDs and
// the rules of its roles) from the Go code `salvor install` uses, so that
// the two cannot drift: `make check-generated` fails when they would.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/salvor-dev/salvor/internal/cli/install"
)

func main() {
	dir := install.ChartDir
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	files, err := install.ChartFiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, "genchart:", err)
		os.Exit(1)
	}
	// crds/ holds only what is generated: a CRD removed from the API goes
	// from the chart too.
	if err := os.RemoveAll(filepath.Join(dir, "crds")); err != nil {
		fmt.Fprintln(os.Stderr, "genchart:", err)
		os.Exit(1)
	}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "genchart:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "genchart:", err)
			os.Exit(1)
		}
	}
}
