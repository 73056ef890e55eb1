// Package modifiers reads a restore's resource modifier rules (Velero's
// format, version v1, kept in a ConfigMap that spec.resourceModifier names)
// and applies them to the items the restore makes.
//
// A rule selects items by group-resource glob, the namespace the backup
// files them under, a name regexp, a label selector and JSON-pointer
// matches, and changes them with RFC 6902 JSON patches, RFC 7386 merge
// patches or Kubernetes strategic merge patches — one kind per rule, as
// in Velero. The rules are user input: everything is parsed and checked
// once, when the restore is validated, so a mistake fails the restore
// with what to fix instead of failing every item. A rule may change what
// an item holds but not which item it is, so the rules cannot move an
// item outside what the restore's spec selects and maps.
package modifiers
