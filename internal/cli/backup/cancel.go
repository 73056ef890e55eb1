package backup

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func newCancel(k *kube.Options) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel NAME",
		Short: "Stop a backup in any phase",
		Long: `Stops a backup: plugin calls in flight are cancelled through their contexts,
running plugin operations get Cancel, and the backup ends Failed with
"cancelled by user". What it had uploaded is removed, so it never looks whole.`,
		Example: "  salvor backup cancel nightly",
		Args:    cobra.ExactArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			b, err := kube.Get[salvorv1.Backup](cmd.Context(), c, k.Namespace, "backup", args[0])
			if err != nil {
				return err
			}
			if finished(b.Status.Phase) {
				return fmt.Errorf("backup %s has already ended (%s)", b.Name, b.Status.Phase)
			}
			if err := kube.Annotate(cmd.Context(), c, b, map[string]string{salvorv1.CancelAnnotation: "true"}); err != nil {
				return fmt.Errorf("cancelling backup %s: %w", b.Name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Backup %q is being cancelled.\n", b.Name)
			return nil
		}),
	}
}
