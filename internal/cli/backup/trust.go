package backup

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/clientconfig"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Trust is what a downloading command's --cacert and
// --insecure-skip-tls-verify (Velero's flags) add to how it trusts the object
// store a download URL points at. The location's own settings apply either
// way: these are for a CLI that reaches the store through something the
// location does not know of (a proxy, a CA bundle of the user's machine).
type Trust struct {
	CACertFile string
	Insecure   bool
}

// AddFlags binds --cacert and --insecure-skip-tls-verify.
func (t *Trust) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&t.CACertFile, "cacert", "", "a PEM file of CA certificates to trust for the download from the object store, besides the system's and the location's caCert (Velero's flag; default: the client config's cacert)")
	fs.BoolVar(&t.Insecure, "insecure-skip-tls-verify", false, "do not verify the object store's certificate for the download (Velero's flag; anyone between can read and change what is downloaded)")
}

// config is the TLS configuration for a download of a backup's or
// restore's file: nil when the system's roots are enough.
func (t Trust) config(ctx context.Context, c client.Client, namespace string, kind salvorv1.DownloadTargetKind, name string) (*tls.Config, error) {
	bsl := locationOf(ctx, c, namespace, kind, name)
	if ref := bsl.CACertRef(); ref != nil {
		// The CA in a Secret: read it as the server does, when this
		// user may.
		secret := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, secret)
		switch pem, ok := secret.Data[ref.Key]; {
		case err == nil && ok:
			bsl.Spec.ObjectStorage.CACert = pem
		case t.CACertFile != "" || t.Insecure:
			// --cacert (or no verification) was given for this.
		case err != nil:
			return nil, fmt.Errorf("location %s keeps its object store's CA in Secret %s/%s (caCertRef), which cannot be read here (%v): pass its certificate with --cacert", bsl.Name, namespace, ref.Name, err)
		default:
			return nil, fmt.Errorf("location %s keeps its object store's CA in Secret %s/%s key %q (caCertRef), which has no such key: pass its certificate with --cacert", bsl.Name, namespace, ref.Name, ref.Key)
		}
	}
	return t.tlsFor(bsl)
}

// locationOf is the storage location a backup's or restore's file is in;
// nil for one the CLI cannot read (then only the system's roots and
// --cacert apply).
func locationOf(ctx context.Context, c client.Client, namespace string, kind salvorv1.DownloadTargetKind, name string) *salvorv1.BackupStorageLocation {
	backupName := name
	if strings.HasPrefix(string(kind), "Restore") {
		rs := &salvorv1.Restore{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, rs); err != nil {
			return nil
		}
		backupName = rs.Spec.BackupName
	}
	b := &salvorv1.Backup{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: backupName}, b); err != nil {
		return nil
	}
	bsl := &salvorv1.BackupStorageLocation{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: b.Spec.StorageLocation}, bsl); err != nil {
		return nil
	}
	return bsl
}

// tlsFor is the TLS configuration that trusts the object store of a
// location (nil if the CLI could not read it) as the server's plugin does —
// the location's CA (Velero's objectStorage.caCert, or config caCert) on top
// of the system's roots, or no verification where its config says
// insecureSkipTLSVerify — and --cacert's bundle (by default the client
// config's cacert), or nothing with
// --insecure-skip-tls-verify. nil when the system's roots are enough.
func (t Trust) tlsFor(bsl *salvorv1.BackupStorageLocation) (*tls.Config, error) {
	if t.Insecure {
		return &tls.Config{InsecureSkipVerify: true}, nil //nolint:gosec // asked for by --insecure-skip-tls-verify
	}
	if t.CACertFile == "" {
		file, err := clientconfig.Get(clientconfig.CACert)
		if err != nil {
			return nil, err
		}
		t.CACertFile = file
	}
	var bundles []string
	if t.CACertFile != "" {
		pem, err := os.ReadFile(t.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cacert %s holds no PEM certificate", t.CACertFile)
		}
		bundles = append(bundles, string(pem))
	}
	if bsl == nil {
		return withRoots(bundles...), nil
	}
	if skip, _ := strconv.ParseBool(bsl.Spec.Config["insecureSkipTLSVerify"]); skip {
		return &tls.Config{InsecureSkipVerify: true}, nil //nolint:gosec // the location's own setting, as its plugin uses it
	}
	if pem := bsl.Spec.CACert(); pem != "" {
		if !x509.NewCertPool().AppendCertsFromPEM([]byte(pem)) {
			return nil, fmt.Errorf("location %s: its caCert holds no PEM certificate", bsl.Name)
		}
		bundles = append(bundles, pem)
	}
	return withRoots(bundles...), nil
}

// withRoots trusts the system's roots and the bundles; nil for none.
func withRoots(bundles ...string) *tls.Config {
	if len(bundles) == 0 {
		return nil
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	for _, pem := range bundles {
		roots.AppendCertsFromPEM([]byte(pem))
	}
	return &tls.Config{RootCAs: roots}
}
