// Command gendocs writes the CLI reference (docs/cli/) from the command
// tree, so the reference cannot drift from the commands. `make generate`
// runs it; `make test` fails if its output would change.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra/doc"

	"github.com/salvor-dev/salvor/internal/cli"
)

func main() {
	dir := "docs/cli"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	root := cli.NewRootCommand()
	root.DisableAutoGenTag = true
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
