// Command kube-scheduler is Kubernetes' scheduler, built from the Go module
// proxy for Salvor's testbed, so pods created as users create them (by
// Jobs, Deployments, DaemonSets or without a nodeName) are bound to the
// testbed node by the real scheduler: its taints, node selectors and
// affinity judged as on a cluster.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
