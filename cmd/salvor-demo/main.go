// Command salvor-demo is what `make demo` and `make demo-csi` run: see
// package internal/demo.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/salvor-dev/salvor/internal/demo"
)

func main() {
	var o demo.Options
	flag.StringVar(&o.Salvor, "salvor", "bin/salvor", "the salvor binary")
	flag.StringVar(&o.PluginDir, "plugin-dir", "bin/plugins", "directory of plugin binaries")
	flag.StringVar(&o.Testbed, "testbed", "bin/testbed", "directory holding etcd and kube-apiserver")
	flag.StringVar(&o.CRDs, "crds", "config/crd", "directory of Salvor's CRDs")
	csi := flag.Bool("csi", false, "tell the volume-data story instead (make demo-csi): a claim's data moved into the bucket and a pod's emptyDir copied there by file-system backup, the storage lost, both restored from the bucket alone")
	flag.Parse()
	o.Out = os.Stdout
	// Ctrl-C stops the demo and everything it started.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run := demo.Run
	if *csi {
		run = demo.RunCSI
	}
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo failed: %v\n", err)
		os.Exit(1)
	}
}
