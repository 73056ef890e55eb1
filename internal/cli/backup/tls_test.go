package backup

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestDownloadTrustsTheLocationsCA: a download URL of an object store
// whose certificate a private CA signs opens with the location's caCert
// (Velero's objectStorage.caCert, or config caCert) or its
// insecureSkipTLSVerify, as the server's plugin reaches it, or with the
// command's --cacert or --insecure-skip-tls-verify (Velero's flags); without
// any it fails on the certificate.
func TestDownloadTrustsTheLocationsCA(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "log") }))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	dir := t.TempDir()
	t.Setenv("SALVOR_CONFIG", filepath.Join(dir, "client-config.json"))
	caFile, otherFile, junkFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "other.pem"), filepath.Join(dir, "junk.pem")
	for file, data := range map[string][]byte{caFile: ca, otherFile: selfSigned(t), junkFile: []byte("no certificate")} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	location := func(spec salvorv1.BackupStorageLocationSpec) *salvorv1.BackupStorageLocation {
		return &salvorv1.BackupStorageLocation{Spec: spec}
	}
	for _, tc := range []struct {
		name  string
		trust Trust
		bsl   *salvorv1.BackupStorageLocation
		ok    bool
	}{
		{"no CA", Trust{}, location(salvorv1.BackupStorageLocationSpec{}), false},
		{"location not readable", Trust{}, nil, false},
		{"objectStorage.caCert", Trust{}, location(salvorv1.BackupStorageLocationSpec{ObjectStorage: salvorv1.ObjectStorageLocation{CACert: ca}}), true},
		{"config caCert", Trust{}, location(salvorv1.BackupStorageLocationSpec{Config: map[string]string{"caCert": string(ca)}}), true},
		{"insecureSkipTLSVerify", Trust{}, location(salvorv1.BackupStorageLocationSpec{Config: map[string]string{"insecureSkipTLSVerify": "true"}}), true},
		{"--cacert", Trust{CACertFile: caFile}, location(salvorv1.BackupStorageLocationSpec{}), true},
		{"--cacert, location not readable", Trust{CACertFile: caFile}, nil, true},
		{"--cacert of another CA", Trust{CACertFile: otherFile}, nil, false},
		{"--cacert of another CA beside the location's", Trust{CACertFile: otherFile}, location(salvorv1.BackupStorageLocationSpec{ObjectStorage: salvorv1.ObjectStorageLocation{CACert: ca}}), true},
		{"--insecure-skip-tls-verify", Trust{Insecure: true}, nil, true},
	} {
		cfg, err := tc.trust.tlsFor(tc.bsl)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, err := open(context.Background(), srv.URL+"/backups/b/b-logs.gz", cfg)
		if tc.ok != (err == nil) {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if err == nil {
			got, _ := io.ReadAll(body)
			body.Close()
			if string(got) != "log" {
				t.Errorf("%s: read %q", tc.name, got)
			}
		} else if !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: failed, but not on the certificate: %v", tc.name, err)
		}
	}
	// The client config's cacert (salvor client config set cacert=FILE)
	// stands in for --cacert.
	if err := os.WriteFile(filepath.Join(dir, "client-config.json"), []byte(`{"cacert": "`+caFile+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Trust{}.tlsFor(nil)
	if err != nil {
		t.Fatal(err)
	}
	if body, err := open(context.Background(), srv.URL+"/backups/b/b-logs.gz", cfg); err != nil {
		t.Errorf("with the client config's cacert: %v", err)
	} else {
		body.Close()
	}
	if cfg, err := (Trust{CACertFile: otherFile}).tlsFor(nil); err != nil {
		t.Fatal(err)
	} else if _, err := open(context.Background(), srv.URL+"/backups/b/b-logs.gz", cfg); err == nil {
		t.Errorf("--cacert did not replace the client config's cacert")
	}
	bad := location(salvorv1.BackupStorageLocationSpec{Config: map[string]string{"caCert": "not a certificate"}})
	bad.Name = "s3"
	for _, tc := range []struct {
		trust Trust
		bsl   *salvorv1.BackupStorageLocation
		want  string
	}{
		{Trust{}, bad, "location s3: its caCert holds no PEM certificate"},
		{Trust{CACertFile: junkFile}, nil, "--cacert " + junkFile + " holds no PEM certificate"},
		{Trust{CACertFile: filepath.Join(dir, "missing.pem")}, nil, "--cacert: open " + filepath.Join(dir, "missing.pem")},
	} {
		if _, err := tc.trust.tlsFor(tc.bsl); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error with %q, got %v", tc.want, err)
		}
	}
}

// selfSigned is the PEM of a CA certificate of its own (every httptest
// server has the same one).
func selfSigned(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
