package restore

import (
	"fmt"
	"slices"
	"sort"

	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// filters are the restore's include/exclude lists and label selectors.
func filters(spec salvorv1.RestoreSpec) resources.Filters {
	return resources.Filters{
		IncludedNamespaces: spec.IncludedNamespaces, ExcludedNamespaces: spec.ExcludedNamespaces,
		IncludedResources: spec.IncludedResources, ExcludedResources: spec.ExcludedResources,
		LabelSelector: spec.LabelSelector, OrLabelSelectors: spec.OrLabelSelectors,
	}
}

// Validate checks a Restore's spec, returning what to fix.
func Validate(spec salvorv1.RestoreSpec) []string {
	var problems []string
	if spec.BackupName == "" && spec.ScheduleName == "" {
		problems = append(problems, "backupName or scheduleName is required: the backup to restore, or the schedule whose newest Completed backup to restore")
	}
	problems = append(problems, filters(spec).Validate()...)
	targets := map[string]string{}
	for from, to := range spec.NamespaceMapping {
		if from == "" || to == "" {
			problems = append(problems, fmt.Sprintf("namespaceMapping %q→%q: both sides must be namespace names", from, to))
			continue
		}
		if resources.IsNamespacePattern(from) || from == "*" {
			problems = append(problems, fmt.Sprintf("namespaceMapping %s:%s: %q is a pattern; a mapping maps one namespace, so name each", from, to, from))
		}
		if errs := validationDNSLabel(to); errs != "" {
			problems = append(problems, fmt.Sprintf("namespaceMapping %s:%s: %q is not a valid namespace name: %s", from, to, to, errs))
		}
		if other, dup := targets[to]; dup {
			problems = append(problems, fmt.Sprintf("namespaceMapping maps both %s and %s to %s: map each to its own namespace", other, from, to))
		}
		targets[to] = from
	}
	switch spec.ExistingResourcePolicy {
	case "", salvorv1.ExistingResourcePolicyNone, salvorv1.ExistingResourcePolicyUpdate:
	default:
		problems = append(problems, fmt.Sprintf("existingResourcePolicy %q: must be none or update", spec.ExistingResourcePolicy))
	}
	if st := spec.RestoreStatus; st != nil {
		for _, r := range st.ExcludedResources {
			if slices.Contains(st.IncludedResources, r) {
				problems = append(problems, fmt.Sprintf("restoreStatus: resource %q is both included and excluded: remove it from includedResources or excludedResources", r))
			}
		}
	}
	return append(problems, validateHooks(spec.Hooks)...)
}

func validationDNSLabel(s string) string {
	if len(s) > 63 {
		return "longer than 63 characters"
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0 && i < len(s)-1
		if !ok {
			return "use lower-case letters, digits and '-', starting and ending with a letter or digit"
		}
	}
	if s == "" {
		return "empty"
	}
	return ""
}

// UnmatchedNamespaces names the namespaces the restore's filters and
// mapping give that the backup does not hold (held): a warning on the
// restore, or with spec.strict a validation error.
func UnmatchedNamespaces(spec salvorv1.RestoreSpec, held map[string]bool) []string {
	where := "in backup " + spec.BackupName
	out := resources.UnmatchedNamespaces("includedNamespaces", spec.IncludedNamespaces, held, where)
	out = append(out, resources.UnmatchedNamespaces("excludedNamespaces", spec.ExcludedNamespaces, held, where)...)
	from := make([]string, 0, len(spec.NamespaceMapping))
	for k := range spec.NamespaceMapping {
		from = append(from, k)
	}
	sort.Strings(from)
	return append(out, resources.UnmatchedNamespaces("namespaceMapping", from, held, where)...)
}
