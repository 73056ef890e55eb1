// Package kube holds what every command that talks to a cluster shares: the
// global --kubeconfig and --namespace flags, clients built from them, and
// the ways commands read objects (Get, Each, Fetch) and change them (Patch,
// Annotate, ClearDefault): by merge patches of only the fields a command
// sets, so a change never writes back a stale copy of the rest.
package kube
