package restore

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func newDelete(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete restores that have ended (never what they restored)",
		Long: `Deletes Restore objects. The objects a restore created stay in the
cluster, and its log and results stay in the backup's location (under
restores/NAME/). A restore still running is refused: cancel it first
(salvor restore cancel NAME) and delete it once it has ended.`,
		Example: "  salvor restore delete r1 r2",
		Args:    cobra.MinimumNArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			ctx := cmd.Context()
			return kube.Each(ctx, c, k.Namespace, "restore", args, func(rs *salvorv1.Restore) error {
				if !rs.Status.Phase.Ended() {
					return fmt.Errorf("restore %s is %s: cancel it first (salvor restore cancel %s) and delete it once it has ended",
						rs.Name, output.Or(string(rs.Status.Phase), "New"), rs.Name)
				}
				if err := c.Delete(ctx, rs); err != nil {
					return fmt.Errorf("deleting restore %s: %w", rs.Name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Restore %q deleted; what it restored stays, and so do its log and results in the location.\n", rs.Name)
				return nil
			})
		}),
	}
	return kube.Deletes(cmd, k, "restore", &salvorv1.RestoreList{}, "Delete restore %s?")
}
