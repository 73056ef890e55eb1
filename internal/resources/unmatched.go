package resources

import (
	"fmt"
	"sort"
	"strings"
)

// UnmatchedNamespaces returns a message for each name in a namespace
// filter (field) that matches none of the namespaces present, saying
// where they were looked for and which there are, with the closest as a
// suggestion: a typo in a filter otherwise selects nothing, silently.
func UnmatchedNamespaces(field string, names []string, present map[string]bool, where string) []string {
	var out []string
	for _, n := range names {
		if n == "*" || present[n] || matchesAny(n, present) {
			continue
		}
		msg := fmt.Sprintf("namespace %q in %s matches no namespace %s", n, field, where)
		if s := closest(n, present); s != "" && !IsNamespacePattern(n) {
			msg += fmt.Sprintf(": did you mean %q?", s)
		}
		out = append(out, msg+" ("+listed(present)+")")
	}
	return out
}

// matchesAny tells whether pattern n matches one of the namespaces.
func matchesAny(n string, present map[string]bool) bool {
	if !IsNamespacePattern(n) {
		return false
	}
	for ns := range present {
		if MatchesNamespace(n, ns) {
			return true
		}
	}
	return false
}

// listed names up to ten of the namespaces, sorted.
func listed(present map[string]bool) string {
	if len(present) == 0 {
		return "there are none"
	}
	names := make([]string, 0, len(present))
	for n := range present {
		names = append(names, n)
	}
	sort.Strings(names)
	more := ""
	if len(names) > 10 {
		names, more = names[:10], fmt.Sprintf(" and %d more", len(names)-10)
	}
	return "there are " + strings.Join(names, ", ") + more
}

// closest is the present name nearest to n by edit distance, if it is
// near enough to be a typo of it (two letters off, or a third of a long name).
func closest(n string, present map[string]bool) string {
	best, bestD := "", max(2, len(n)/3)+1
	for p := range present {
		if d := distance(n, p); d < bestD || (d == bestD && best != "" && p < best) {
			best, bestD = p, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
