// Package resourcepolicy reads and applies the resource policies of a
// backup or a restore, Velero's format for them (version v1) kept in the
// ConfigMap their spec.resourcePolicy names:
//
//   - volumePolicies: each a set of conditions on a persistent volume and
//     its claim (capacity range, storage class, CSI driver and attributes,
//     NFS server and path, volume type, the claim's labels, phase, volume
//     mode and access modes) and an action. The first policy whose
//     conditions all hold decides: skip (the volume's object is backed up,
//     its data is not) or snapshot.
//   - includeExcludePolicy: per-scope resource lists merged under the
//     backup's own, which win where both speak of a resource.
//   - clusterScopedFilterPolicy and namespacedFilterPolicies (Velero
//     1.18's filter policies, filters.go): label selectors and name
//     patterns per resource, and per namespace, that choose items in place
//     of the spec's selectors. A restore takes these alone.
//
// The server's global backup volume policies (salvor server
// --global-backup-volume-policies-configmap, Velero's) follow a backup's
// own: a backup's policy decides where both match.
//
// Everything is checked when the backup is validated, and what Salvor
// cannot do as asked is refused there rather than done otherwise: the
// custom action (Salvor runs no custom volume actions), and filter
// policies' resource names
// that mean no resource, or one of the other scope (Velero logs those and
// goes on).
package resourcepolicy
