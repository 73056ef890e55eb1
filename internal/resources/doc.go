// Package resources knows the cluster's resources as backups and restores
// need them: discovery of what the API server serves (tolerating API groups
// that cannot be described, which are reported, not fatal), the many names a
// resource answers to ("secrets", "secret", "Secret", "crb",
// "rolebindings.rbac.authorization.k8s.io"), and selection: the
// include/exclude lists (namespace names and Velero's namespace patterns)
// and label selectors of a Backup or Restore spec, a
// plugin's AppliesTo, and the names in a namespace filter that match nothing
// (with the closest there is, so a typo is seen). It also resets a restored
// claim's and volume's binding so the control plane binds them again
// (ResetBinding), and unbinds a claim whose volume a restore does not bring
// back (UnbindClaim), for the restore engine and the CSI restore action alike.
//
// It exists so the backup and restore engines share one meaning of every
// filter; neither imports the other.
package resources
