package restore

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func newCancel(k *kube.Options) *cobra.Command {
	return &cobra.Command{
		Use: "cancel NAME", Short: "Stop a restore", Example: "  salvor restore cancel r1", Args: cobra.ExactArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			rs, err := kube.Get[salvorv1.Restore](cmd.Context(), c, k.Namespace, "restore", args[0])
			if err != nil {
				return err
			}
			if rs.Status.Phase.Ended() {
				return fmt.Errorf("restore %s has already ended (%s)", rs.Name, rs.Status.Phase)
			}
			if err := kube.Annotate(cmd.Context(), c, rs, map[string]string{salvorv1.CancelAnnotation: "true"}); err != nil {
				return fmt.Errorf("cancelling restore %s: %w", rs.Name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Restore %q is being cancelled.\n", rs.Name)
			return nil
		}),
	}
}
