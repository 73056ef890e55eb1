package output

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
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

// Duration shows a span the way every table and describe does, as
// kubectl shows ages: "45s", "5m3s", "2h10m", "29d" — never Go's
// "720h0m0s".
func Duration(d time.Duration) string {
	return duration.HumanDuration(d)
}

// Or is s, or dflt when s is empty.
func Or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// Judged prints a Backup's or Restore's validation errors and the fields
// of Velero's spec it ignores, a line each, as describe shows them.
func Judged(w io.Writer, validationErrors, ignored []string) {
	for _, v := range validationErrors {
		fmt.Fprintf(w, "Validation:   %s\n", v)
	}
	if len(ignored) > 0 {
		fmt.Fprintf(w, "Ignored:      %s (Velero's; Salvor does not act on them)\n", strings.Join(ignored, ", "))
	}
}

// Results prints a backup's or restore's results file (Velero's shape:
// warnings and errors, each Velero's own, cluster-scoped and per
// namespace) a message a line.
func Results(w io.Writer, raw []byte) {
	type result struct {
		Velero     []string            `json:"velero"`
		Cluster    []string            `json:"cluster"`
		Namespaces map[string][]string `json:"namespaces"`
	}
	var r struct {
		Warnings result `json:"warnings"`
		Errors   result `json:"errors"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		fmt.Fprintf(w, "\nResults (not in the expected shape: %v):\n%s\n", err, strings.TrimSpace(string(raw)))
		return
	}
	for _, part := range []struct {
		title string
		r     result
	}{{"Errors", r.Errors}, {"Warnings", r.Warnings}} {
		var lines []string
		for _, m := range part.r.Velero {
			lines = append(lines, "  Salvor:     "+m)
		}
		for _, m := range part.r.Cluster {
			lines = append(lines, "  Cluster:    "+m)
		}
		nss := make([]string, 0, len(part.r.Namespaces))
		for ns := range part.r.Namespaces {
			nss = append(nss, ns)
		}
		sort.Strings(nss)
		for _, ns := range nss {
			for _, m := range part.r.Namespaces[ns] {
				lines = append(lines, fmt.Sprintf("  Namespace %s: %s", ns, m))
			}
		}
		if len(lines) > 0 {
			fmt.Fprintf(w, "\n%s:\n%s\n", part.title, strings.Join(lines, "\n"))
		}
	}
}

// DryRun prints the items of a dry-run restore's results that would fail
// or differ, and those it would create that it notes something of (the
// others are counted in its status).
func DryRun(w io.Writer, raw []byte) {
	var r struct {
		DryRun []struct {
			Item, Outcome, Detail string
		} `json:"dryRun"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return
	}
	// Items to be made are listed only with something to say of them (a
	// namespace not there to check against, a status to be restored).
	for _, part := range []struct{ title, outcome string }{{"Would fail", "would-fail"}, {"Differ from the backup", "differs"},
		{"Would create, noted", "would-create"}} {
		var lines []string
		for _, it := range r.DryRun {
			if it.Outcome == part.outcome && (it.Detail != "" || part.outcome != "would-create") {
				lines = append(lines, "  "+it.Item+": "+it.Detail)
			}
		}
		if len(lines) > 0 {
			fmt.Fprintf(w, "\n%s:\n%s\n", part.title, strings.Join(lines, "\n"))
		}
	}
}
