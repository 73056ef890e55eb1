package cli

import (
	"bytes"
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/salvor-dev/salvor/internal/cli/backup"
	"github.com/salvor-dev/salvor/internal/cli/clientconfig"
	"github.com/salvor-dev/salvor/internal/cli/datamover"
	"github.com/salvor-dev/salvor/internal/cli/debug"
	"github.com/salvor-dev/salvor/internal/cli/install"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/location"
	"github.com/salvor-dev/salvor/internal/cli/nodeagent"
	"github.com/salvor-dev/salvor/internal/cli/plugin"
	"github.com/salvor-dev/salvor/internal/cli/repo"
	"github.com/salvor-dev/salvor/internal/cli/restore"
	"github.com/salvor-dev/salvor/internal/cli/runplugins"
	"github.com/salvor-dev/salvor/internal/cli/schedule"
	"github.com/salvor-dev/salvor/internal/cli/server"
	"github.com/salvor-dev/salvor/internal/cli/snapshotlocation"
	"github.com/salvor-dev/salvor/internal/cli/version"
)

// NewRootCommand returns the salvor command with every subcommand.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "salvor",
		Short: "Back up and restore Kubernetes objects and volumes",
		Long: `Salvor backs up a cluster's objects and volumes to object storage and
restores them, extended by plugins that speak Velero's plugin protocol.`,
		SilenceUsage: true,
	}
	k := &kube.Options{}
	k.AddFlags(root.PersistentFlags())
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return k.Defaults(cmd.Flags()) }
	root.AddCommand(
		backup.NewCommand(k),
		location.NewCommand(k),
		install.NewCommand(k),
		install.NewUninstallCommand(k),
		restore.NewCommand(k),
		schedule.NewCommand(k),
		snapshotlocation.NewCommand(k),
		plugin.NewCommand(k),
		server.NewCommand(k),
		runplugins.NewCommand(),
		datamover.NewCommand(k),
		nodeagent.NewCommand(k),
		repo.NewCommand(k),
		version.NewCommand(k),
		clientconfig.NewCommand(),
		debug.NewCommand(k, func(ctx context.Context, args ...string) (string, error) {
			// A command tree of its own, on the cluster and namespace
			// debug was given.
			sub := NewRootCommand()
			var out bytes.Buffer
			sub.SetOut(&out)
			sub.SetErr(&out)
			sub.SetArgs(append([]string{"--kubeconfig", k.Kubeconfig, "--context", k.Context, "--namespace", k.Namespace}, args...))
			err := sub.ExecuteContext(ctx)
			return out.String(), err
		}),
	)
	// Velero's verb-first order; each noun built afresh for each verb.
	nouns := func() []*cobra.Command {
		return []*cobra.Command{backup.NewCommand(k), restore.NewCommand(k), schedule.NewCommand(k),
			location.NewCommand(k), snapshotlocation.NewCommand(k), plugin.NewCommand(k)}
	}
	root.AddCommand(
		verbFirst("create", "Create backups, restores, schedules and locations (as 'salvor NOUN create')", nouns()...),
		verbFirst("get", "List backups, restores, schedules, locations and plugins (as 'salvor NOUN get')", nouns()...),
		verbFirst("describe", "Describe backups, restores and schedules (as 'salvor NOUN describe')", nouns()...),
		verbFirst("delete", "Delete backups, restores, schedules and locations (as 'salvor NOUN delete')", nouns()...),
	)
	strict(root)
	// Velero's spelling of --context, so its runbook lines run as written;
	// set last, as cobra hands it only to commands already added.
	root.SetGlobalNormalizationFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "kubecontext" {
			name = "context"
		}
		return pflag.NormalizedName(name)
	})
	return root
}
