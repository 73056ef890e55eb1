// Package repo holds `salvor repo`: the kopia repositories moved volume
// data lives in (BackupRepositories), with their maintenance and size, as
// Velero's `velero repo get` lists them.
package repo
