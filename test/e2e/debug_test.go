package e2e

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/salvor-dev/salvor/internal/testbed"
)

// TestDebugBundle: `salvor debug --backup B --restore R` (Velero's) writes
// one tar.gz, readable by its owner only, with the versions and plugins,
// Salvor's objects, the server's objects and the backup's and restore's
// descriptions and logs — and no Secret's data, neither Salvor's nor a
// backed-up one. A part that cannot be collected is named in errors.txt
// and the rest is written.
func TestDebugBundle(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	const secret = "TOPSECRET-do-not-bundle"
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "app"}, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"}, StringData: map[string]string{"password": secret}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "keys", Namespace: "salvor"}, StringData: map[string]string{"key": secret}})
	c.mustSalvor(t, "backup", "create", "b1", "--include-namespaces", "app", "--wait")
	c.mustSalvor(t, "restore", "create", "r1", "--from-backup", "b1", "--namespace-mappings", "app:app-copy", "--wait")

	bundle := filepath.Join(t.TempDir(), "bundle.tar.gz")
	out := c.mustSalvor(t, "debug", "--backup", "b1", "--backup", "nope", "--restore", "r1", "--output", bundle)
	if !strings.Contains(out, "Debug bundle "+bundle+" written.") || !strings.Contains(out, "2 parts could not be collected: errors.txt in the bundle says why.") {
		t.Errorf("salvor debug:\n%s", out)
	}
	if fi, err := os.Stat(bundle); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the bundle: %v, %v", fi, err)
	}
	files := map[string]string{}
	f, err := os.Open(bundle)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[strings.TrimPrefix(h.Name, "salvor-debug/")] = string(b)
	}
	for name, want := range map[string]string{
		"version.txt":                     "Server:",
		"plugins.txt":                     "salvor.dev/s3",
		"resources/backups.yaml":          "name: b1",
		"resources/restores.yaml":         "name: r1",
		"resources/backup-locations.yaml": "name: primary",
		"server/events.yaml":              "items:",
		"server/logs/none.txt":            "No server pods in namespace salvor.",
		"backups/b1/describe.txt":         "Resource list:",
		"backups/b1/log.jsonl":            `"msg":"backup finished"`,
		"restores/r1/describe.txt":        "Resource list:\n  v1/ConfigMap:\n    - app-copy/cfg(created)\n  v1/Namespace:\n    - app-copy(created)\n  v1/Secret:\n    - app-copy/db(created)\n",
		"restores/r1/log.jsonl":           `"msg"`,
		"errors.txt":                      "backups/nope/describe.txt: salvor backup describe nope --details",
	} {
		if !strings.Contains(files[name], want) {
			t.Errorf("%s lacks %q:\n%s", name, want, files[name])
		}
	}
	for name, content := range files {
		if strings.Contains(content, secret) {
			t.Errorf("%s holds a Secret's data", name)
		}
	}
	if out, err := c.salvor(t, "debug", "--backup", "../x", "--output", filepath.Join(t.TempDir(), "b.tar.gz")); err == nil || !strings.Contains(out, `"../x" is not a backup or restore name`) {
		t.Errorf("debug --backup ../x: %v\n%s", err, out)
	}
}
