package location

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// keySelector reads --encryption-key-secret NAME[/KEY].
func keySelector(v string) (corev1.SecretKeySelector, error) {
	name, key, ok := strings.Cut(v, "/")
	if !ok {
		key = "keys"
	}
	if name == "" || key == "" || strings.Contains(key, "/") {
		return corev1.SecretKeySelector{}, fmt.Errorf("--encryption-key-secret %q: want NAME or NAME/KEY", v)
	}
	return corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}, nil
}

func newRotateKey(k *kube.Options) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "rotate-key NAME",
		Short: "Add a new key to an encrypted location: new backups use it, older ones stay readable",
		Long: `Asks the server to add a new key to the location's key Secret and waits until
it has. Objects written from then on are encrypted to the new key; the older
keys stay in the Secret, so every backup already written stays readable.
Removing an old key from the Secret makes the backups written with it
unreadable.`,
		Example: "  salvor backup-location rotate-key vault",
		Args:    cobra.ExactArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			ctx := cmd.Context()
			bsl, err := kube.Get[salvorv1.BackupStorageLocation](ctx, c, k.Namespace, "backup storage location", args[0])
			if err != nil {
				return err
			}
			if bsl.Spec.Encryption == nil {
				return fmt.Errorf("backup storage location %s is not encrypted: it has no keys to rotate", bsl.Name)
			}
			before := bsl.Status.EncryptionKeys
			if err := kube.Annotate(ctx, c, bsl, map[string]string{salvorv1.RotateKeyAnnotation: strconv.FormatInt(time.Now().UnixNano(), 36)}); err != nil {
				return fmt.Errorf("asking to rotate the key of location %s: %w", bsl.Name, err)
			}
			err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
				cur := &salvorv1.BackupStorageLocation{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(bsl), cur); err != nil {
					return false, err
				}
				bsl = cur
				return cur.Annotations[salvorv1.RotateKeyAnnotation] == "" && cur.Status.EncryptionKeys > before, nil
			})
			if err != nil {
				return fmt.Errorf("location %s: the server did not add a key within %s (is it running? `salvor backup-location get %s -o yaml` shows its status): %w", bsl.Name, timeout, bsl.Name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Location %q now has %d keys; new objects are encrypted to %s.\n", bsl.Name, bsl.Status.EncryptionKeys, bsl.Status.EncryptionRecipient)
			return nil
		}),
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for the server")
	return cmd
}
