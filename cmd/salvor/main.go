// Command salvor is Salvor's CLI, server and built-in plugin binary.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	// Salvor's image has no OS, so no CA certificates: these are used
	// when the system has none, so that S3 over HTTPS works there too.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/salvor-dev/salvor/internal/cli"
)

func main() {
	// Ctrl-C and SIGTERM cancel the command's context: a server stops its
	// controllers and plugins, a waiting CLI stops waiting.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cli.NewRootCommand().ExecuteContext(ctx); err != nil {
		var usage *cli.UsageError
		if errors.As(err, &usage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
