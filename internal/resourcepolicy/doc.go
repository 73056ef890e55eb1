// Package resourcepolicy reads and applies a backup's resource policies,
// Velero's format for them (version v1) kept in the ConfigMap a backup's
// spec.resourcePolicy names:
//
//   - volumePolicies: each a set of conditions on a persistent volume and
//     its claim (capacity range, storage class, CSI driver and attributes,
//     NFS server and path, volume type, the claim's labels, phase, volume
//     mode and access modes) and an action. The first policy whose
//     conditions all hold decides: skip (the volume's object is backed up,
//     its data is not) or snapshot.
//   - includeExcludePolicy: per-scope resource lists merged under the
//     backup's own, which win where both speak of a resource.
//
// The server's global backup volume policies (salvor server
// --global-backup-volume-policies-configmap, Velero's) follow a backup's
// own: a backup's policy decides where both match.
//
// Everything is checked when the backup is validated, and what Salvor
// cannot do as asked is refused there rather than done otherwise: the
// fs-backup and custom actions (Salvor has no file-system backup, and
// runs no custom volume actions) and Velero's fine-grained filter policies
// (clusterScopedFilterPolicy, namespacedFilterPolicies).
package resourcepolicy
