// Package kube holds what every command that talks to a cluster shares: the
// global --kubeconfig, --context and --namespace flags, clients built from
// them; the ways commands read objects (Get, Each, Fetch) and change them
// (Patch, Annotate, ClearDefault): by merge patches of only the fields a
// command sets, so a change never writes back a stale copy of the rest; how
// create commands create or print (-o) an object with Velero's fields its Go
// type has not (CreateWith, Print); and the Velero forms of naming what a
// describe or delete acts on (--selector, and --all for the verbs that
// change: Describes, Chooses, Deletes).
package kube
