// Command velerotestbed is Velero's own command, for the pods Velero runs
// on the testbed node (its node agent, its data mover pods): the node
// runs containers as processes sharing the host's network, where every
// controller-runtime manager binds :8080 for metrics unless told
// otherwise, and Velero's node agent and server do not say otherwise. So
// this build turns that default off; everything else is Velero's.
package main

import (
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vmware-tanzu/velero/pkg/cmd"
	"github.com/vmware-tanzu/velero/pkg/cmd/velero"
)

func main() {
	server.DefaultBindAddress = "0"
	cmd.CheckError(velero.NewCommand(filepath.Base(os.Args[0])).Execute())
}
