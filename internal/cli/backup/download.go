package backup

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func newDownload(k *kube.Options) *cobra.Command {
	var (
		file    string
		force   bool
		timeout time.Duration
		trust   Trust
	)
	cmd := &cobra.Command{
		Use:   "download NAME",
		Short: "Download a backup's tarball",
		Long: `Downloads a backup's tarball — every backed-up object as JSON, in Velero's
layout — through a short-lived URL the server signs, so no credentials for
the location are needed. It is written to NAME-data.tar.gz, or where
--output says ("-" for standard output), and kept only once it has been read
through as a whole gzip-compressed tar: a download cut short leaves no file.
An existing file is left as it is unless --force. From an encrypted location
the server sends the tarball encrypted to a key of this command's own, and
it is written decrypted.

The tarball holds every backed-up Secret in clear text: the file is made
readable by its owner only; keep it as safe as the cluster.`,
		Example: "  salvor backup download nightly\n  salvor backup download nightly -o - | tar -tzf - | head",
		Args:    cobra.ExactArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			name := args[0]
			if file == "" {
				file = name + "-data.tar.gz"
			}
			if file != "-" && !force {
				if _, err := os.Lstat(file); err == nil {
					return fmt.Errorf("%s exists: left as it is (--force replaces it)", file)
				}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			b := &salvorv1.Backup{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: name}, b); err != nil {
				return fmt.Errorf("backup %s: %w", name, err)
			}
			if !hasFiles(b.Status.Phase) {
				return fmt.Errorf("backup %s is %s: it has no tarball to download yet", name, output.Or(string(b.Status.Phase), "New"))
			}
			body, err := Download(ctx, c, k.Namespace, salvorv1.DownloadTargetBackupContents, name, trust)
			if err != nil {
				return err
			}
			defer body.Close()
			if file == "-" {
				return wholeTarball(io.TeeReader(body, cmd.OutOrStdout()), name)
			}
			if err := save(body, file, name); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Backup %s downloaded to %s.\n", name, file)
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&file, "output", "o", "", `file to write (default: NAME-data.tar.gz; "-" for standard output)`)
	f.BoolVar(&force, "force", false, "replace the file if it exists")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "bound on the whole download")
	trust.AddFlags(f)
	return cmd
}

// save writes the tarball beside path under a temporary name and renames
// it into place only once it has been read through whole.
func save(body io.Reader, path, name string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("downloading backup %s: %w", name, err)
	}
	defer os.Remove(tmp.Name()) // gone once renamed; removed if anything failed
	err = wholeTarball(io.TeeReader(body, tmp), name)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("downloading backup %s to %s: %w", name, path, err)
	}
	return nil
}

// wholeTarball reads r to its end as a gzip-compressed tar: a body cut
// short or damaged fails its gzip checksum or its tar framing.
func wholeTarball(r io.Reader, name string) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("backup %s's tarball is not gzip-compressed: %w", name, err)
	}
	tr := tar.NewReader(gz)
	for {
		_, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("backup %s's tarball is damaged or cut short: %w", name, err)
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return fmt.Errorf("backup %s's tarball is damaged or cut short: %w", name, err)
		}
	}
	// The rest: the tar's padding and the gzip trailer, whose checksum is
	// checked at its end.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return fmt.Errorf("backup %s's tarball is damaged or cut short: %w", name, err)
	}
	_, err = io.Copy(io.Discard, r)
	return err
}
