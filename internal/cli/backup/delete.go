package backup

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func newDelete(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete backups and their files in object storage",
		Long: `Deletes each backup: the server runs the DeleteItemAction plugins over its
items, removes its files from the backup storage location, then removes the
Backup object. A backup synced into other clusters disappears from them at
their next sync.`,
		Example: "  salvor backup delete nightly",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := k.Client()
			if err != nil {
				return err
			}
			return kube.Each(cmd.Context(), c, k.Namespace, "backup", args, func(b *salvorv1.Backup) error {
				if err := c.Delete(cmd.Context(), b); err != nil {
					return fmt.Errorf("deleting backup %s: %w", b.Name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Backup %q is being deleted; its files go first.\n", b.Name)
				return nil
			})
		},
	}
	return cmd
}
