// Command salvor is Salvor's CLI, server and built-in plugin binary.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/salvor-dev/salvor/internal/cli"
)

func main() {
	// Ctrl-C and SIGTERM cancel the command's context: a server stops its
	// controllers and plugins, a waiting CLI stops waiting.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cli.NewRootCommand().ExecuteContext(ctx); err != nil {
		os.Exit(1)
	}
}
