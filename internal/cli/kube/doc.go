// Package kube holds what every command that talks to a cluster shares: the
// global --kubeconfig and --namespace flags, and clients built from them.
package kube
