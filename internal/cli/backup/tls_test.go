package backup

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestDownloadTrustsTheLocationsCA: a download URL of an object store
// whose certificate a private CA signs opens with the location's caCert
// (Velero's objectStorage.caCert, or config caCert) or its
// insecureSkipTLSVerify, as the server's plugin reaches it; without them
// it fails on the certificate.
func TestDownloadTrustsTheLocationsCA(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "log") }))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for _, tc := range []struct {
		name string
		spec salvorv1.BackupStorageLocationSpec
		ok   bool
	}{
		{"no CA", salvorv1.BackupStorageLocationSpec{}, false},
		{"objectStorage.caCert", salvorv1.BackupStorageLocationSpec{ObjectStorage: salvorv1.ObjectStorageLocation{CACert: ca}}, true},
		{"config caCert", salvorv1.BackupStorageLocationSpec{Config: map[string]string{"caCert": string(ca)}}, true},
		{"insecureSkipTLSVerify", salvorv1.BackupStorageLocationSpec{Config: map[string]string{"insecureSkipTLSVerify": "true"}}, true},
	} {
		cfg, err := tlsFor(&salvorv1.BackupStorageLocation{Spec: tc.spec})
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
	bad := &salvorv1.BackupStorageLocation{Spec: salvorv1.BackupStorageLocationSpec{Config: map[string]string{"caCert": "not a certificate"}}}
	bad.Name = "s3"
	if _, err := tlsFor(bad); err == nil || !strings.Contains(err.Error(), "location s3: its caCert holds no PEM certificate") {
		t.Errorf("a caCert with no certificate: %v", err)
	}
}
