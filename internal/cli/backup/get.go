package backup

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/salvor-dev/salvor/internal/cli/get"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func newGet(k *kube.Options) *cobra.Command {
	return get.Command[salvorv1.Backup](k, "backup", "List backups", "  salvor backup get\n  salvor backup get nightly -o json",
		&salvorv1.BackupList{}, get.Table[salvorv1.Backup]{
			Header: []string{"NAME", "STATUS", "ITEMS", "ERRORS", "WARNINGS", "AGE", "EXPIRES", "STORAGE LOCATION", "SELECTOR"},
			Row: func(b *salvorv1.Backup) []string {
				return []string{b.Name, phase(*b), progress(*b), fmt.Sprint(b.Status.Errors), fmt.Sprint(b.Status.Warnings),
					age(b.CreationTimestamp), expires(b.Status.Expiration), b.Spec.StorageLocation, selector(b.Spec.LabelSelector, b.Spec.OrLabelSelectors)}
			},
			WideHeader: []string{"NAMESPACES", "RESOURCES", "STARTED", "COMPLETED", "SCHEDULE"},
			WideRow: func(b *salvorv1.Backup) []string {
				return []string{output.Filter(b.Spec.IncludedNamespaces, b.Spec.ExcludedNamespaces), output.Filter(b.Spec.IncludedResources, b.Spec.ExcludedResources),
					output.Time(b.Status.StartTimestamp), output.Time(b.Status.CompletionTimestamp), output.Or(b.Labels[salvorv1.ScheduleNameLabel], "<none>")}
			},
		})
}

// phase is the backup's phase as a user should read it: Deleting from the
// moment its deletion is recorded, whether or not a server has acted on it.
func phase(b salvorv1.Backup) string {
	if b.DeletionTimestamp != nil {
		return string(salvorv1.BackupPhaseDeleting)
	}
	if b.Status.Phase == "" {
		return "New"
	}
	return string(b.Status.Phase)
}

func progress(b salvorv1.Backup) string {
	if b.Status.Progress == nil {
		return "-"
	}
	return fmt.Sprintf("%d/%d", b.Status.Progress.ItemsBackedUp, b.Status.Progress.TotalItems)
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "-"
	}
	return output.Duration(time.Since(t.Time))
}

func expires(t *metav1.Time) string {
	if t == nil {
		return "-"
	}
	left := time.Until(t.Time)
	if left < 0 {
		return "expired"
	}
	return output.Duration(left)
}

// selector says a spec's label selectors as --selector and --or-selector
// take them.
func selector(s *metav1.LabelSelector, or []*metav1.LabelSelector) string {
	if len(or) > 0 {
		parts := make([]string, len(or))
		for i, o := range or {
			parts[i] = strings.TrimSpace(metav1.FormatLabelSelector(o))
		}
		return strings.Join(parts, " or ")
	}
	if s == nil {
		return "<none>"
	}
	return strings.TrimSpace(metav1.FormatLabelSelector(s))
}
