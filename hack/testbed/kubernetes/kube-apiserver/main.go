// Command kube-apiserver is Kubernetes' API server, built from the Go module
// proxy for Salvor's testbed (no binary downloads are possible here).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
