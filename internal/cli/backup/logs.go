package backup

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	agecrypt "filippo.io/age"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func newLogs(k *kube.Options) *cobra.Command {
	var timeout time.Duration
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
			rc, err := Download(ctx, c, k.Namespace, salvorv1.DownloadTargetBackupLog, args[0])
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(cmd.OutOrStdout(), rc)
			return err
		}),
	}
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait for the server")
	return cmd
}

// Download asks the server for a backup file's URL and opens it, gunzipped.
func Download(ctx context.Context, c client.Client, namespace string, kind salvorv1.DownloadTargetKind, name string) (io.ReadCloser, error) {
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
	tlsConfig, err := locationTLS(ctx, c, namespace, kind, name)
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

// open reads an http(s) URL, or a file:// URL (the filesystem store's).
func open(ctx context.Context, raw string, tlsConfig *tls.Config) (io.ReadCloser, error) {
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

// locationTLS is how the CLI trusts the object store a download URL
// points at, as the server's plugin does: the location's CA (Velero's
// objectStorage.caCert, or config caCert) on top of the system's, or no
// verification where the location's config says insecureSkipTLSVerify.
// nil is the default: a location with neither, or one the CLI may not read.
func locationTLS(ctx context.Context, c client.Client, namespace string, kind salvorv1.DownloadTargetKind, name string) (*tls.Config, error) {
	backupName := name
	if strings.HasPrefix(string(kind), "Restore") {
		rs := &salvorv1.Restore{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, rs); err != nil {
			return nil, nil
		}
		backupName = rs.Spec.BackupName
	}
	b := &salvorv1.Backup{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: backupName}, b); err != nil {
		return nil, nil
	}
	bsl := &salvorv1.BackupStorageLocation{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: b.Spec.StorageLocation}, bsl); err != nil {
		return nil, nil
	}
	return tlsFor(bsl)
}

// tlsFor is the TLS configuration that trusts a location's object store:
// nil when the system's roots do.
func tlsFor(bsl *salvorv1.BackupStorageLocation) (*tls.Config, error) {
	if skip, _ := strconv.ParseBool(bsl.Spec.Config["insecureSkipTLSVerify"]); skip {
		return &tls.Config{InsecureSkipVerify: true}, nil //nolint:gosec // the location's own setting, as its plugin uses it
	}
	pem := bsl.Spec.CACert()
	if pem == "" {
		return nil, nil
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM([]byte(pem)) {
		return nil, fmt.Errorf("location %s: its caCert holds no PEM certificate", bsl.Name)
	}
	return &tls.Config{RootCAs: roots}, nil
}
