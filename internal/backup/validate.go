package backup

import (
	"fmt"
	"slices"

	"github.com/salvor-dev/salvor/internal/hooks"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Validate checks a Backup's spec, returning what to fix.
func Validate(spec salvorv1.BackupSpec) []string {
	problems := filters(spec).Validate()
	if scopedFilters(spec) && (len(spec.IncludedResources) > 0 || len(spec.ExcludedResources) > 0 || spec.IncludeClusterResources != nil) {
		problems = append(problems, "includedResources, excludedResources and includeClusterResources choose resources one way, "+
			"the included/excluded namespace- and cluster-scoped resources another: use one way (Velero refuses both too)")
	}
	for _, pair := range [][2][]string{{spec.IncludedNamespaceScopedResources, spec.ExcludedNamespaceScopedResources},
		{spec.IncludedClusterScopedResources, spec.ExcludedClusterScopedResources}} {
		for _, r := range pair[1] {
			if r != "*" && slices.Contains(pair[0], r) {
				problems = append(problems, fmt.Sprintf("resource %q is both included and excluded in the scoped resource lists: remove it from one", r))
			}
		}
	}
	if spec.TTL.Duration < 0 {
		problems = append(problems, "ttl must not be negative")
	}
	if spec.ItemOperationTimeout.Duration < 0 {
		problems = append(problems, "itemOperationTimeout must not be negative")
	}
	return append(problems, hooks.ValidateBackup(spec.Hooks)...)
}
