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
func MatchesNamespace(entry, ns string) bool { return MatchesPattern(entry, ns) }

// MatchesPattern tells whether entry, a name or a pattern in the syntax
// of namespace patterns, matches name (a namespace's, or an item's for a
// filter policy's names).
func MatchesPattern(entry, name string) bool {
	if entry == "*" || entry == name {
		return true
	}
	if !IsNamespacePattern(entry) {
		return false
	}
	// Names here have no "/", so path.Match's "*" spans the whole name.
	ok, _ := path.Match(entry, name)
	return ok
}

// NamespacePatternProblem says what is wrong with a namespace filter entry
// of field, "" when nothing is: a pattern uses only what Velero's do, so a
// pattern means the same to both.
func NamespacePatternProblem(field, entry string) string {
	if !IsNamespacePattern(entry) {
		return ""
	}
	if p := PatternSyntaxProblem(entry, "namespace"); p != "" {
		return fmt.Sprintf("namespace pattern %q in %s %s", entry, field, p)
	}
	return ""
}

// PatternSyntaxProblem says what is wrong with the syntax of a pattern
// for names of what ("namespace"), "" when nothing is.
func PatternSyntaxProblem(entry, what string) string {
	if i := strings.IndexAny(entry, `\^!{}|(),`); i >= 0 {
		return fmt.Sprintf("uses %q, which %s patterns do not support: use *, ?, [abc] or [a-z]", entry[i:i+1], what)
	}
	if _, err := path.Match(entry, ""); err != nil || strings.Count(entry, "[") != strings.Count(entry, "]") {
		return "is malformed: every [ needs a closing ] with at least one character between"
	}
	return ""
}
