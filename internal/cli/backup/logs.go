package backup

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	agecrypt "filippo.io/age"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func newLogs(k *kube.Options) *cobra.Command {
	var (
		timeout time.Duration
		trust   Trust
	)
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Print a backup's log",
		Long: `Prints the log the server kept for a backup (JSON lines), fetched from the
backup's storage location through a short-lived URL the server signs.`,
		Example: "  salvor backup logs nightly\n  salvor backup logs nightly | jq -r .msg",
		Args:    cobra.ExactArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if why := noLog(ctx, c, k.Namespace, args[0]); why != "" {
				return errors.New(why)
			}
			rc, err := Download(ctx, c, k.Namespace, salvorv1.DownloadTargetBackupLog, args[0], trust)
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(cmd.OutOrStdout(), rc)
			return err
		}),
	}
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait for the server")
	trust.AddFlags(cmd.Flags())
	return cmd
}

// noLog says why a backup has no log to download, "" when it may have one
// (or the Backup cannot be read, and the server is asked anyway): a backup
// that never ran has none, and "not in the location" would send its user
// looking for a file instead of at why it never ran.
func noLog(ctx context.Context, c client.Client, namespace, name string) string {
	b := &salvorv1.Backup{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, b)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("backup %s does not exist in namespace %s (salvor backup get lists the backups)", name, namespace)
	case err != nil:
		return ""
	case b.Status.Phase == salvorv1.BackupPhaseFailedValidation:
		return fmt.Sprintf("backup %s never ran: it failed validation, so it has no log (salvor backup describe %s says why)", name, name)
	case b.Status.Phase == "" || b.Status.Phase == salvorv1.BackupPhaseNew:
		return fmt.Sprintf("backup %s has not started yet (phase New), so it has no log yet (salvor backup describe %s shows its state)", name, name)
	}
	return ""
}

// Download asks the server for a backup file's URL and opens it, gunzipped.
func Download(ctx context.Context, c client.Client, namespace string, kind salvorv1.DownloadTargetKind, name string, trust Trust) (io.ReadCloser, error) {
	// What the file belongs to, for messages: a restore's or a backup's.
	of := "backup " + name
	if strings.HasPrefix(string(kind), "Restore") {
		of = "restore " + name
	}
	// A key of this download's own: a file of an encrypted location comes
	// encrypted to it, and only this process can read it.
	id, err := agecrypt.GenerateX25519Identity()
	if err != nil {
		return nil, err
	}
	d := &salvorv1.DownloadRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-", Namespace: namespace},
		Spec:       salvorv1.DownloadRequestSpec{Target: salvorv1.DownloadTarget{Kind: kind, Name: name}, Recipient: id.Recipient().String()},
	}
	if err := c.Create(ctx, d); err != nil {
		return nil, fmt.Errorf("asking the server for %s of %s: %w", kind, of, err)
	}
	defer c.Delete(context.WithoutCancel(ctx), d) //nolint:errcheck // the server removes old requests too
	for d.Status.Phase != salvorv1.DownloadRequestPhaseProcessed {
		if d.Status.Phase == salvorv1.DownloadRequestPhaseFailed {
			return nil, fmt.Errorf("the server could not provide %s of %s: %s", kind, of, d.Status.Message)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no answer from the server about %s of %s (is salvor server running?): %w", kind, of, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return nil, err
		}
	}
	tlsConfig, err := trust.config(ctx, c, namespace, kind, name)
	if err != nil {
		return nil, fmt.Errorf("downloading %s of %s: %w", kind, of, err)
	}
	body, err := open(ctx, d.Status.DownloadURL, tlsConfig)
	if err != nil {
		return nil, fmt.Errorf("downloading %s of %s: %w", kind, of, err)
	}
	if d.Status.Encrypted {
		plain, err := agecrypt.Decrypt(body, id)
		if err != nil {
			body.Close()
			return nil, fmt.Errorf("decrypting %s of %s: %w", kind, of, err)
		}
		body = struct {
			io.Reader
			io.Closer
		}{plain, body}
	}
	if kind == salvorv1.DownloadTargetBackupContents {
		return body, nil
	}
	gz, err := gzip.NewReader(body)
	if err != nil {
		body.Close()
		return nil, fmt.Errorf("%s of %s is not gzip: %w", kind, of, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{gz, body}, nil
}

// open reads an http(s) URL, a file:// URL (the filesystem store's), or
// a base64 data: URL (a restore's file a ReadOnly location's server keeps
// in memory, handed out inline).
func open(ctx context.Context, raw string, tlsConfig *tls.Config) (io.ReadCloser, error) {
	if rest, ok := strings.CutPrefix(raw, "data:"); ok {
		meta, data, found := strings.Cut(rest, ",")
		if !found || !strings.HasSuffix(meta, ";base64") {
			return nil, errors.New("a data: URL that is not base64")
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, fmt.Errorf("a data: URL: %w", err)
		}
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "file" {
		return os.Open(u.Path)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, err
	}
	hc := http.DefaultClient
	if tlsConfig != nil {
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.TLSClientConfig = tlsConfig
		hc = &http.Client{Transport: transport}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s answered %s", u.Host, resp.Status)
	}
	return resp.Body, nil
}
