package restore

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clibackup "github.com/salvor-dev/salvor/internal/cli/backup"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func newLogs(k *kube.Options) *cobra.Command {
	timeout := time.Minute
	var trust clibackup.Trust
	cmd := &cobra.Command{
		Use: "logs NAME", Short: "Print a restore's log", Example: "  salvor restore logs r1", Args: cobra.ExactArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			rc, err := clibackup.Download(ctx, c, k.Namespace, salvorv1.DownloadTargetRestoreLog, args[0], trust)
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(cmd.OutOrStdout(), rc)
			return err
		}),
	}
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "how long to wait for the server")
	trust.AddFlags(cmd.Flags())
	return cmd
}
