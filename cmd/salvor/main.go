// Command salvor is Salvor's CLI, server and built-in plugin binary.
package main

import (
	"os"

	"github.com/salvor-dev/salvor/internal/cli"
)

func main() {
	if err := cli.NewRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
