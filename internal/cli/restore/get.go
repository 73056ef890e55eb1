package restore

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/cli/get"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func newGet(k *kube.Options) *cobra.Command {
	return get.Command[salvorv1.Restore](k, "restore", "List restores", "  salvor restore get\n  salvor restore get r1 -o yaml",
		&salvorv1.RestoreList{}, get.Table[salvorv1.Restore]{
			Header: []string{"NAME", "BACKUP", "STATUS", "ITEMS", "ERRORS", "WARNINGS", "AGE"},
			Row: func(rs *salvorv1.Restore) []string {
				done, total := progress(rs)
				return []string{rs.Name, rs.Spec.BackupName, phase(rs), fmt.Sprintf("%d/%d", done, total),
					fmt.Sprint(rs.Status.Errors), fmt.Sprint(rs.Status.Warnings), output.Duration(time.Since(rs.CreationTimestamp.Time))}
			},
			WideHeader: []string{"NAMESPACES", "MAPPING", "STARTED", "COMPLETED"},
			WideRow: func(rs *salvorv1.Restore) []string {
				var mapping []string
				for from, to := range rs.Spec.NamespaceMapping {
					mapping = append(mapping, from+":"+to)
				}
				sort.Strings(mapping)
				return []string{output.Filter(rs.Spec.IncludedNamespaces, rs.Spec.ExcludedNamespaces), strings.Join(mapping, ","),
					output.Time(rs.Status.StartTimestamp), output.Time(rs.Status.CompletionTimestamp)}
			},
		})
}
