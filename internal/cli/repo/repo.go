package repo

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/cli/get"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// NewCommand returns `salvor repo`.
func NewCommand(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{Use: "repo", Aliases: []string{"repos", "backup-repository", "backup-repositories"},
		Short: "Work with the kopia repositories of moved volume data"}
	cmd.AddCommand(newGet(k))
	return cmd
}

func newGet(k *kube.Options) *cobra.Command {
	return get.Command[salvorv1.BackupRepository](k, "repo", "List the repositories of moved volume data, their maintenance and size",
		"  salvor repo get\n  salvor repo get default-app-kopia -o yaml",
		&salvorv1.BackupRepositoryList{}, get.Table[salvorv1.BackupRepository]{
			Header: []string{"NAME", "STATUS", "LOCATION", "NAMESPACE", "LAST MAINTENANCE", "SIZE", "SNAPSHOTS", "MESSAGE"},
			Row: func(r *salvorv1.BackupRepository) []string {
				return []string{r.Name, output.Or(string(r.Status.Phase), "New"), r.Spec.BackupStorageLocation, r.Spec.VolumeNamespace,
					output.Or(output.Time(r.Status.LastMaintenanceTime), "never"), size(r), fmt.Sprint(r.Status.Snapshots), output.Or(running(r), r.Status.Message)}
			},
			WideHeader: []string{"FREQUENCY", "RECENT RUNS"},
			WideRow: func(r *salvorv1.BackupRepository) []string {
				return []string{r.Spec.MaintenanceFrequency.Duration.String(), recent(r)}
			},
		})
}

// size is the repository's size as its last maintenance measured it.
func size(r *salvorv1.BackupRepository) string {
	if r.Status.LastMaintenanceTime == nil && r.Status.SizeBytes == 0 {
		return "-"
	}
	return bytes(r.Status.SizeBytes)
}

func running(r *salvorv1.BackupRepository) string {
	if r.Status.MaintenanceJob == "" {
		return ""
	}
	return "maintenance running (Job " + r.Status.MaintenanceJob + ")"
}

// recent is the results of the latest runs, oldest first.
func recent(r *salvorv1.BackupRepository) string {
	out := ""
	for i, m := range r.Status.RecentMaintenance {
		if i > 0 {
			out += ","
		}
		out += string(m.Result)
		if m.StartTimestamp != nil && m.CompleteTimestamp != nil {
			out += "(" + output.Duration(m.CompleteTimestamp.Sub(m.StartTimestamp.Time)) + ")"
		}
	}
	return output.Or(out, "<none>")
}

func bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
