package resources

import (
	"fmt"
	"path"
	"strings"
)

// A namespace filter entry is a namespace's name or, as in Velero 1.18, a
// glob pattern: * matches any run of characters, ? any one, [abc] and
// [a-z] one of a set. "*" alone is every namespace. A backup, a schedule
// or a restore written for Velero with "app-*" selects the same namespaces
// here. Namespace names hold none of *, ? and [, so an entry with one of
// them was never a name.

// IsNamespacePattern tells whether a filter entry is a glob pattern (not "*" alone).
func IsNamespacePattern(entry string) bool {
	return entry != "*" && strings.ContainsAny(entry, "*?[]")
}

// MatchesNamespace tells whether a namespace filter entry selects
// namespace ns.
func MatchesNamespace(entry, ns string) bool {
	if entry == "*" || entry == ns {
		return true
	}
	if !IsNamespacePattern(entry) {
		return false
	}
	// Namespace names have no "/", so path.Match's "*" spans the whole name.
	ok, _ := path.Match(entry, ns)
	return ok
}

// NamespacePatternProblem says what is wrong with a namespace filter entry
// of field, "" when nothing is: a pattern uses only what Velero's do, so a
// pattern means the same to both.
func NamespacePatternProblem(field, entry string) string {
	if !IsNamespacePattern(entry) {
		return ""
	}
	if i := strings.IndexAny(entry, `\^!{}|(),`); i >= 0 {
		return fmt.Sprintf("namespace pattern %q in %s uses %q, which namespace patterns do not support: use *, ?, [abc] or [a-z]", entry, field, entry[i:i+1])
	}
	if _, err := path.Match(entry, ""); err != nil || strings.Count(entry, "[") != strings.Count(entry, "]") {
		return fmt.Sprintf("namespace pattern %q in %s is malformed: every [ needs a closing ] with at least one character between", entry, field)
	}
	return ""
}
