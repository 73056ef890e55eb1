// Package v1 holds Salvor's Kubernetes API, group salvor.dev, version v1.
//
// Field names follow Velero's Backup and Restore where the idea is the same,
// because plugins receive these objects as JSON and read those fields: a
// plugin written for Velero finds includedNamespaces, storageLocation, ttl and
// the rest where it expects them.
//
// +kubebuilder:object:generate=true
// +groupName=salvor.dev
package v1
