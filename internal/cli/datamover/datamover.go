package datamover

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/datamover"
	"github.com/salvor-dev/salvor/internal/kopiarepo"
)

// NewCommand returns `salvor data-mover`.
func NewCommand(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "data-mover",
		Short: "Move volume data between a claim and a backup location (run in mover pods by the server)",
		Long: `Runs inside the mover pods the server makes for DataUploads and DataDownloads:
"backup" reads the volume mounted in the pod and writes it into the location's
kopia repository for its namespace; "restore" writes a backed-up volume's data
from that repository into the (new) volume mounted in the pod. Both report
progress on their DataUpload or DataDownload. "maintain" runs kopia's full
maintenance on a BackupRepository's repository (in the maintenance Jobs the
server makes) and reports its size on the BackupRepository. The server makes the pods, with the
claim, the location's credentials and the repository password mounted; there is
no need to run it by hand.`,
	}
	cmd.AddCommand(backupCommand(k), restoreCommand(k), maintainCommand(k))
	return cmd
}

func maintainCommand(k *kube.Options) *cobra.Command {
	m := &datamover.Mover{}
	safety := string(kopiarepo.SafetyFull)
	cmd := &cobra.Command{
		Use:     "maintain --backup-repository NAME",
		Short:   "Run kopia's full maintenance on a BackupRepository's repository",
		Example: "  # as the server's maintenance Jobs run it\n  salvor data-mover maintain --backup-repository default-app-kopia --namespace salvor --work-dir /work",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if m.Name == "" {
				return fmt.Errorf("--backup-repository: name the BackupRepository to maintain")
			}
			s, err := kopiarepo.ParseSafety(safety)
			if err != nil {
				return fmt.Errorf("--safety: %w", err)
			}
			c, err := k.Client()
			if err != nil {
				return err
			}
			m.Client, m.Namespace, m.Password = c, k.Namespace, datamover.MoverPassword(os.Getenv)
			err = m.Maintain(cmd.Context(), s)
			datamover.WriteTermination(err)
			if err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "BackupRepository %s: maintained\n", m.Name)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&m.Name, "backup-repository", "", "the BackupRepository, in --namespace, to maintain")
	f.StringVar(&safety, "safety", safety, "full keeps kopia's safety margins; none frees forgotten data at once (nothing else may write the repository meanwhile)")
	f.StringVar(&m.WorkDir, "work-dir", datamover.WorkPath, "a writable directory for kopia's configuration and caches")
	f.StringVar(&m.CredentialsFile, "credentials-file", "", "the location's credentials file (mounted from its credential Secret); empty uses the SDK's default chain")
	f.StringVar(&m.CACertFile, "cacert-file", "", "the CA bundle of the location's caCertRef (mounted from its Secret)")
	return cmd
}

// direction is what tells the two subcommands apart.
type direction struct {
	use, short, example string
	// kind and flag name the DataUpload or DataDownload to move.
	kind, flag, flagHelp string
	// dirFlag names where the volume is mounted.
	dirFlag, dirHelp string
	run              func(*datamover.Mover, context.Context) error
	done             string
}

func backupCommand(k *kube.Options) *cobra.Command {
	return moverCommand(k, direction{
		use: "backup --data-upload NAME", short: "Upload the mounted volume of a DataUpload into its location",
		example: "salvor data-mover backup --data-upload NAME --namespace salvor --source /data --work-dir /work",
		kind:    "DataUpload", flag: "data-upload", flagHelp: "the DataUpload, in --namespace, whose volume this pod has mounted",
		dirFlag: "source", dirHelp: "where the volume is mounted",
		run: (*datamover.Mover).Upload, done: "uploaded",
	})
}

func restoreCommand(k *kube.Options) *cobra.Command {
	return moverCommand(k, direction{
		use: "restore --data-download NAME", short: "Write a DataDownload's moved data into the mounted volume",
		example: "salvor data-mover restore --data-download NAME --namespace salvor --target /data --work-dir /work",
		kind:    "DataDownload", flag: "data-download", flagHelp: "the DataDownload, in --namespace, whose new volume this pod has mounted",
		dirFlag: "target", dirHelp: "where the new volume is mounted",
		run: (*datamover.Mover).Download, done: "restored",
	})
}

func moverCommand(k *kube.Options, d direction) *cobra.Command {
	m := &datamover.Mover{}
	cmd := &cobra.Command{
		Use:     d.use,
		Short:   d.short,
		Example: "  # as the server's mover pods run it\n  " + d.example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if m.Name == "" {
				return fmt.Errorf("--%s: name the %s to move", d.flag, d.kind)
			}
			c, err := k.Client()
			if err != nil {
				return err
			}
			m.Client, m.Namespace, m.Password = c, k.Namespace, datamover.MoverPassword(os.Getenv)
			err = d.run(m, cmd.Context())
			datamover.WriteTermination(err)
			if err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s: %s\n", d.kind, m.Name, d.done)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&m.Name, d.flag, "", d.flagHelp)
	f.StringVar(&m.Dir, d.dirFlag, datamover.VolumePath, d.dirHelp)
	f.StringVar(&m.WorkDir, "work-dir", datamover.WorkPath, "a writable directory for kopia's configuration and caches")
	f.StringVar(&m.CredentialsFile, "credentials-file", "", "the location's credentials file (mounted from its credential Secret); empty uses the SDK's default chain")
	f.StringVar(&m.CACertFile, "cacert-file", "", "the CA bundle of the location's caCertRef (mounted from its Secret)")
	return cmd
}
