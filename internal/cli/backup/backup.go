package backup

import (
	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/cli/kube"
)

// NewCommand returns `salvor backup` and its verbs.
func NewCommand(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "backup",
		Aliases: []string{"backups"},
		Short:   "Work with backups",
	}
	cmd.AddCommand(newCreate(k), newGet(k), newDescribe(k), newLogs(k), newDownload(k), newCancel(k), newDelete(k), newVerify(k))
	return cmd
}
