// Package install holds `salvor install`: the manifests a cluster needs to
// run Salvor — CRDs, a namespace, a service account with least-privilege
// RBAC, the server Deployment with leader election and plugins as init
// containers, and optionally a default backup location — printed with
// --dry-run or applied.
package install
