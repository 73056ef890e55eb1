// Package veleroflag lets the create commands take Velero's flags for
// fields Salvor's specs have not (`--csi-snapshot-timeout`,
// `--or-selector`, ...). Each command lists its own; given, a flag's field
// is written into the object as Velero writes it, for the server to judge
// as it judges a Velero object applied as YAML — refused with what to use
// instead, or kept and listed as ignored — so a Velero runbook's command
// runs, and what it asks for is never dropped unsaid.
package veleroflag
