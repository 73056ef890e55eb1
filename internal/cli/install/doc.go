// Package install holds `salvor install`: the manifests a cluster needs to
// run Salvor — CRDs, a namespace, a service account with least-privilege
// RBAC, the server Deployment with leader election and plugins as init
// containers, a metrics Service, and optionally a default backup location
// with its credentials Secret — printed with --dry-run or applied; and
// `salvor uninstall`, which removes them again in an order that keeps every
// backup: the server stopped first, the Backups' file finalizers taken off
// before their CRD goes.
//
// It is also the source of the Helm chart's generated files (ChartFiles:
// the CRDs and every role's rules; BuiltinResources: the built-in resources
// by API group), so that the chart and the command grant the same.
//
// TenantObjects are what self-service needs beside the install: the
// salvor-tenant role and the admission policies that record who made a
// tenant's objects (docs/self-service.md; not yet installed by a flag).
package install
