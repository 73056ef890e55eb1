package backup

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func newGet(k *kube.Options) *cobra.Command {
	var format output.Format
	cmd := &cobra.Command{
		Use:     "get [NAME...]",
		Short:   "List backups",
		Example: "  salvor backup get\n  salvor backup get nightly -o json",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Validate(); err != nil {
				return err
			}
			c, err := k.Client()
			if err != nil {
				return err
			}
			var items []salvorv1.Backup
			for _, name := range args {
				b := &salvorv1.Backup{}
				if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: k.Namespace, Name: name}, b); err != nil {
					return fmt.Errorf("backup %s: %w", name, err)
				}
				items = append(items, *b)
			}
			if len(args) == 0 {
				list := &salvorv1.BackupList{}
				if err := c.List(cmd.Context(), list, client.InNamespace(k.Namespace)); err != nil {
					return err
				}
				items = list.Items
			}
			var v any = items
			if len(args) == 1 {
				v = items[0]
			}
			if done, err := format.Structured(cmd.OutOrStdout(), v); done {
				return err
			}
			var rows [][]string
			for _, b := range items {
				rows = append(rows, []string{b.Name, phase(b), progress(b), fmt.Sprint(b.Status.Errors), fmt.Sprint(b.Status.Warnings),
					age(b.CreationTimestamp), expires(b.Status.Expiration), b.Spec.StorageLocation, selector(b.Spec.LabelSelector)})
			}
			return output.Table(cmd.OutOrStdout(), []string{"NAME", "STATUS", "ITEMS", "ERRORS", "WARNINGS", "AGE", "EXPIRES", "STORAGE LOCATION", "SELECTOR"}, rows)
		},
	}
	output.AddFlag(cmd.Flags(), &format)
	return cmd
}

func phase(b salvorv1.Backup) string {
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
	return time.Since(t.Time).Round(time.Second).String()
}

func expires(t *metav1.Time) string {
	if t == nil {
		return "-"
	}
	left := time.Until(t.Time)
	if left < 0 {
		return "expired"
	}
	if left > 48*time.Hour {
		return fmt.Sprintf("%dd", int(left.Hours()/24))
	}
	return left.Round(time.Minute).String()
}

func selector(s *metav1.LabelSelector) string {
	if s == nil {
		return "<none>"
	}
	return strings.TrimSpace(metav1.FormatLabelSelector(s))
}
