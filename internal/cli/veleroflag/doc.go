// Package veleroflag lets Salvor's commands take Velero's flags. The create
// commands take those for fields Salvor's specs have not
// (`--csi-snapshot-timeout`, `--or-selector`, ...): each command lists its
// own; given, a flag's field is written into the object as Velero writes
// it, for the server to judge as it judges a Velero object applied as YAML
// — refused with what to use instead, or kept and listed as ignored. And
// `salvor install` and `salvor server` refuse Velero's flags for machinery
// Salvor has not (Refuse), saying why, before they change anything. So a
// Velero runbook's command runs, or stops at once, and what it asks for is
// never dropped unsaid.
package veleroflag
