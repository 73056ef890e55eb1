package datamover

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/datamover"
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
progress on their DataUpload or DataDownload. The server makes the pods, with the
claim, the location's credentials and the repository password mounted; there is
no need to run it by hand.`,
	}
	cmd.AddCommand(backupCommand(k), restoreCommand(k))
	return cmd
}

func backupCommand(k *kube.Options) *cobra.Command {
	m := &datamover.Mover{}
	cmd := &cobra.Command{
		Use:   "backup --data-upload NAME",
		Short: "Upload the mounted volume of a DataUpload into its location",
		Example: `  # as the server's mover pods run it
  salvor data-mover backup --data-upload NAME --namespace salvor --source /data --work-dir /work`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if m.Name == "" {
				return fmt.Errorf("--data-upload: name the DataUpload to move")
			}
			c, err := k.Client()
			if err != nil {
				return err
			}
			m.Client, m.Namespace, m.Password = c, k.Namespace, os.Getenv(datamover.PasswordEnv)
			err = m.Upload(cmd.Context())
			datamover.WriteTermination(err)
			if err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "DataUpload %s: uploaded\n", m.Name)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&m.Name, "data-upload", "", "the DataUpload, in --namespace, whose volume this pod has mounted")
	f.StringVar(&m.Dir, "source", datamover.VolumePath, "where the volume is mounted")
	f.StringVar(&m.WorkDir, "work-dir", datamover.WorkPath, "a writable directory for kopia's configuration and caches")
	f.StringVar(&m.CredentialsFile, "credentials-file", "", "the location's credentials file (mounted from its credential Secret); empty uses the SDK's default chain")
	return cmd
}

func restoreCommand(k *kube.Options) *cobra.Command {
	m := &datamover.Mover{}
	cmd := &cobra.Command{
		Use:   "restore --data-download NAME",
		Short: "Write a DataDownload's moved data into the mounted volume",
		Example: `  # as the server's mover pods run it
  salvor data-mover restore --data-download NAME --namespace salvor --target /data --work-dir /work`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if m.Name == "" {
				return fmt.Errorf("--data-download: name the DataDownload to restore")
			}
			c, err := k.Client()
			if err != nil {
				return err
			}
			m.Client, m.Namespace, m.Password = c, k.Namespace, os.Getenv(datamover.PasswordEnv)
			err = m.Download(cmd.Context())
			datamover.WriteTermination(err)
			if err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "DataDownload %s: restored\n", m.Name)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&m.Name, "data-download", "", "the DataDownload, in --namespace, whose new volume this pod has mounted")
	f.StringVar(&m.Dir, "target", datamover.VolumePath, "where the new volume is mounted")
	f.StringVar(&m.WorkDir, "work-dir", datamover.WorkPath, "a writable directory for kopia's configuration and caches")
	f.StringVar(&m.CredentialsFile, "credentials-file", "", "the location's credentials file (mounted from its credential Secret); empty uses the SDK's default chain")
	return cmd
}
