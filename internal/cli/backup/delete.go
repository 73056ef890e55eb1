package backup

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func newDelete(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete backups and their files in object storage",
		Long: `Deletes each backup: the server runs the DeleteItemAction plugins over its
items, deletes the volume snapshots this cluster recorded it taking, removes
its files from the backup storage location, then removes the Backup object.
A backup that a restore or a verification is reading is deleted once that
ends; no restore of it starts meanwhile.
A snapshot only the backup's files name (a backup synced from the location,
another cluster's or Velero's) is kept, and the server's log names it. A
backup synced into other clusters disappears from them at their next sync.`,
		Example: "  salvor backup delete nightly",
		Args:    cobra.MinimumNArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			return kube.Each(cmd.Context(), c, k.Namespace, "backup", args, func(b *salvorv1.Backup) error {
				// Say what will really happen to the files: the server can
				// remove them only through the backup's location.
				what := "its files go first"
				bsl := &salvorv1.BackupStorageLocation{}
				err := c.Get(cmd.Context(), client.ObjectKey{Namespace: k.Namespace, Name: b.Spec.StorageLocation}, bsl)
				switch {
				case b.Spec.StorageLocation == "" || apierrors.IsNotFound(err):
					what = fmt.Sprintf("its location %q does not exist, so only the Backup object goes: its files, if any, stay in their bucket", b.Spec.StorageLocation)
				case err == nil && bsl.Spec.ReadOnly():
					what = fmt.Sprintf("its location %s is ReadOnly, so only the Backup object goes: its files and snapshots stay", bsl.Name)
				default:
					restores := &salvorv1.RestoreList{}
					if err := c.List(cmd.Context(), restores, client.InNamespace(b.Namespace)); err != nil {
						return fmt.Errorf("deleting backup %s: listing the restores that may read it: %w", b.Name, err)
					}
					if readers := salvorv1.ReadersOf(b, restores.Items); len(readers) > 0 {
						what = "the server waits for " + strings.Join(readers, ", ") + ", which reads it, to end; then its files go"
					}
				}
				if err := c.Delete(cmd.Context(), b); err != nil {
					return fmt.Errorf("deleting backup %s: %w", b.Name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Backup %q is being deleted; %s.\n", b.Name, what)
				return nil
			})
		}),
	}
	return kube.Deletes(cmd, k, "backup", &salvorv1.BackupList{}, "Delete backup %s and its files in object storage?")
}
