package output

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// List joins names with ", ", or says empty when there are none.
func List(v []string, empty string) string {
	if len(v) == 0 {
		return empty
	}
	return strings.Join(v, ", ")
}

// Filter shows an include and an exclude list, as a spec's filters read:
// "all" when nothing is named.
func Filter(include, exclude []string) string {
	out := "all"
	if len(include) > 0 {
		out = strings.Join(include, ",")
	}
	if len(exclude) > 0 {
		out += " except " + strings.Join(exclude, ",")
	}
	return out
}

// Time shows a time in UTC, RFC 3339, or "-" when unset.
func Time(t *metav1.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// Or is s, or dflt when s is empty.
func Or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}
