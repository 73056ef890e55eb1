// Command kube-controller-manager is Kubernetes' controller manager, built
// from the Go module proxy for Salvor's testbed. The CSI tests run only its
// volume binding and protection controllers, so claims bind to the volumes
// a CSI provisioner creates, and its namespace controller, so a deleted
// namespace is emptied and goes.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
