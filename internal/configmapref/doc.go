// Package configmapref reads the ConfigMap a spec names by a typed
// reference, as Velero keeps a restore's resource modifiers and a
// backup's resource policies: one YAML document under the ConfigMap's one
// key, in the namespace of the object that names it. What is wrong with
// the reference (another kind, no name, no such ConfigMap, more than one
// key) is a problem for validation to report, saying what to fix; only a
// failure to read is an error.
package configmapref
