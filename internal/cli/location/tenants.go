package location

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// tenantFlags are the flags that open a location to tenant namespaces
// (spec.tenants), shared by create and set.
type tenantFlags struct {
	selector         string
	share            bool
	none             bool
	jobs, maxBackups int
	maxBytes         string
}

// bind registers the flags; set alone offers --no-tenants.
func (t *tenantFlags) bind(f *pflag.FlagSet, withNone bool) {
	f.StringVar(&t.selector, "tenant-selector", "", "open the location to the Backups, Restores and Schedules of the namespaces this label selector selects (salvor server --tenants; '' selects every namespace): spec.tenants.namespaceSelector")
	f.BoolVar(&t.share, "share-backups", false, "with tenants: let each tenant namespace see and restore the location's backups made in Salvor's namespace that hold it (spec.tenants.shareBackups)")
	f.IntVar(&t.jobs, "tenant-max-concurrent-jobs", 0, "with tenants: how many backups and restores of one tenant namespace run at once (spec.tenants.quota.maxConcurrentJobs; 0: 1); the rest wait their turn while other namespaces' go ahead")
	f.IntVar(&t.maxBackups, "tenant-max-backups", 0, "with tenants: how many backups one tenant namespace keeps in the location (spec.tenants.quota.maxBackups; 0: no limit); a backup beyond it fails validation")
	f.StringVar(&t.maxBytes, "tenant-max-bytes", "", "with tenants: how much one tenant namespace's backups may hold in the location, their files and their volumes' moved data (spec.tenants.quota.maxBytes, a quantity such as 50Gi; 0: no limit); a backup made when they hold as much fails validation")
	if withNone {
		f.BoolVar(&t.none, "no-tenants", false, "close the location to tenant namespaces (removes spec.tenants); their backups in it stay, but they can no longer back up to it nor restore from it")
	}
}

// given tells whether any of the flags was given.
func (t *tenantFlags) given(f *pflag.FlagSet) bool {
	for _, name := range []string{"tenant-selector", "share-backups", "no-tenants", "tenant-max-concurrent-jobs", "tenant-max-backups", "tenant-max-bytes"} {
		if f.Changed(name) {
			return true
		}
	}
	return false
}

// apply is what the flags make of a location's spec.tenants (current,
// nil when it has none), or what to fix in them.
func (t *tenantFlags) apply(f *pflag.FlagSet, current *salvorv1.LocationTenants) (*salvorv1.LocationTenants, error) {
	if t.none {
		if f.Changed("tenant-selector") || f.Changed("share-backups") || f.Changed("tenant-max-concurrent-jobs") || f.Changed("tenant-max-backups") || f.Changed("tenant-max-bytes") {
			return nil, fmt.Errorf("--no-tenants closes the location to tenants: give it without --tenant-selector, --share-backups and the --tenant-max flags")
		}
		return nil, nil
	}
	out := current.DeepCopy()
	if f.Changed("tenant-selector") {
		sel, err := metav1.ParseToLabelSelector(t.selector)
		if err != nil {
			return nil, fmt.Errorf("--tenant-selector %q: %w", t.selector, err)
		}
		// The parser gives empty lists where the selector has none; the
		// location stores none.
		if len(sel.MatchLabels) == 0 {
			sel.MatchLabels = nil
		}
		if len(sel.MatchExpressions) == 0 {
			sel.MatchExpressions = nil
		}
		for i := range sel.MatchExpressions {
			if len(sel.MatchExpressions[i].Values) == 0 {
				sel.MatchExpressions[i].Values = nil
			}
		}
		if out == nil {
			out = &salvorv1.LocationTenants{}
		}
		out.NamespaceSelector = sel
	}
	if f.Changed("share-backups") {
		if out == nil {
			return nil, fmt.Errorf("--share-backups shares the location's backups with its tenants: give --tenant-selector too, the location has none")
		}
		out.ShareBackups = t.share
	}
	for _, q := range []struct {
		flag  string
		value int
		field func(*salvorv1.TenantQuota) *int
	}{
		{"tenant-max-concurrent-jobs", t.jobs, func(q *salvorv1.TenantQuota) *int { return &q.MaxConcurrentJobs }},
		{"tenant-max-backups", t.maxBackups, func(q *salvorv1.TenantQuota) *int { return &q.MaxBackups }},
	} {
		if !f.Changed(q.flag) {
			continue
		}
		if out == nil {
			return nil, fmt.Errorf("--%s is a quota of the location's tenants: give --tenant-selector too, the location has none", q.flag)
		}
		if q.value < 0 {
			return nil, fmt.Errorf("--%s %d: must not be negative (0: the default)", q.flag, q.value)
		}
		if out.Quota == nil {
			out.Quota = &salvorv1.TenantQuota{}
		}
		*q.field(out.Quota) = q.value
	}
	if f.Changed("tenant-max-bytes") {
		if out == nil {
			return nil, fmt.Errorf("--tenant-max-bytes is a quota of the location's tenants: give --tenant-selector too, the location has none")
		}
		q, err := resource.ParseQuantity(t.maxBytes)
		if err != nil || q.Sign() < 0 {
			return nil, fmt.Errorf("--tenant-max-bytes %q: give a size such as 50Gi (0: no limit)", t.maxBytes)
		}
		if out.Quota == nil {
			out.Quota = &salvorv1.TenantQuota{}
		}
		out.Quota.MaxBytes = nil
		if !q.IsZero() {
			out.Quota.MaxBytes = &q
		}
	}
	if out != nil && out.Quota != nil && *out.Quota == (salvorv1.TenantQuota{}) {
		out.Quota = nil
	}
	return out, nil
}

// tenantsText is a location's spec.tenants for get -o wide.
func tenantsText(t *salvorv1.LocationTenants) string {
	if t == nil || t.NamespaceSelector == nil {
		return "-"
	}
	text := metav1.FormatLabelSelector(t.NamespaceSelector)
	if text == "<none>" {
		text = "every namespace"
	}
	if t.ShareBackups {
		text += " (backups shared)"
	}
	if q := t.Quota; q != nil {
		text += fmt.Sprintf(" (each: %d jobs at once", max(q.MaxConcurrentJobs, 1))
		if q.MaxBackups > 0 {
			text += fmt.Sprintf(", %d backups", q.MaxBackups)
		}
		if q.MaxBytes != nil {
			text += ", " + q.MaxBytes.String()
		}
		text += ")"
	}
	return text
}
