// Command grpcfloor is the transport floor of the plugin round-trip
// benchmark: a bare gRPC server for BackupItemAction v2 on a Unix socket,
// with the plugins' transport settings, that answers Execute with the item
// it was sent. It has no go-plugin, no SDK and no JSON, so a call to it
// costs what the process boundary and gRPC cost on this machine and
// nothing else; the SDK and Velero plugins are measured against it.
package main

import (
	"context"
	"fmt"
	"net"
	"os"

	"google.golang.org/grpc"

	biav2 "github.com/salvor-dev/salvor/pkg/plugin/proto/backupitemaction/v2"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

type echo struct {
	biav2.UnimplementedBackupItemActionServer
}

func (echo) Execute(_ context.Context, req *biav2.ExecuteRequest) (*biav2.ExecuteResponse, error) {
	return &biav2.ExecuteResponse{Item: req.GetItem()}, nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: grpcfloor SOCKET")
		os.Exit(2)
	}
	l, err := net.Listen("unix", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	g := grpc.NewServer(wire.ServerOptions()...)
	biav2.RegisterBackupItemActionServer(g, echo{})
	// The benchmark waits for this line before it dials.
	fmt.Println("serving")
	if err := g.Serve(l); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
