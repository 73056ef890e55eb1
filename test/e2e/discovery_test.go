package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/salvor-dev/salvor/internal/testbed"
)

// auditDiscovery has the API server write every request for its API
// groups (GET /api, GET /apis: discovery) to an audit log at *path.
func auditDiscovery(path *string) clusterOption {
	return func(t testing.TB, env *envtest.Environment) {
		dir := t.TempDir()
		policy := filepath.Join(dir, "policy.yaml")
		if err := os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  nonResourceURLs: ["/api", "/apis"]
- level: None
`), 0o600); err != nil {
			t.Fatal(err)
		}
		*path = filepath.Join(dir, "audit.log")
		env.ControlPlane.GetAPIServer().Configure().
			Set("audit-policy-file", policy).Set("audit-log-path", *path).Set("audit-log-mode", "blocking")
	}
}

// discoveryRequest is one audited request for the API groups.
type discoveryRequest struct {
	RequestURI string    `json:"requestURI"`
	UserAgent  string    `json:"userAgent"`
	Received   time.Time `json:"requestReceivedTimestamp"`
}

// discoveriesSince are the requests for the API groups (/apis) received
// from since on, as the audit log at path has them.
func discoveriesSince(t *testing.T, path string, since time.Time) []discoveryRequest {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []discoveryRequest
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		var r discoveryRequest
		if err := json.Unmarshal(s.Bytes(), &r); err != nil {
			t.Fatalf("audit log line %q: %v", s.Text(), err)
		}
		uri, _, _ := strings.Cut(r.RequestURI, "?")
		if uri == "/apis" && !r.Received.Before(since) {
			out = append(out, r)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// serverDiscoveries are the requests in rs the Salvor server made (the
// CLI's own, to map the resources it names, are not the run's).
func serverDiscoveries(rs []discoveryRequest) (n int, seen []string) {
	for _, r := range rs {
		seen = append(seen, r.UserAgent+" "+r.RequestURI)
		if strings.HasPrefix(r.UserAgent, "salvor-server/") {
			n++
		}
	}
	return n, seen
}

// TestDiscoveryOncePerRun: the server reads the cluster's resources from
// the API server once per backup, its validation of resource filters
// included, and once per restore, whose validation checks the names in its
// filters too — counted in the API server's audit log.
func TestDiscoveryOncePerRun(t *testing.T) {
	t.Parallel()
	var audit string
	c := startCluster(t, auditDiscovery(&audit))
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "app"}, Data: map[string]string{"a": "b"}})

	since := time.Now()
	c.mustSalvor(t, "backup", "create", "one", "--include-namespaces", "app", "--include-resources", "configmaps,namespaces", "--wait")
	if n, seen := serverDiscoveries(discoveriesSince(t, audit, since)); n != 1 {
		t.Errorf("the server asked for the API groups %d times during one backup, want once; requests: %q", n, seen)
	}

	since = time.Now()
	c.mustSalvor(t, "restore", "create", "copy", "--from-backup", "one", "--namespace-mappings", "app:app-copy",
		"--include-resources", "configmaps,namespaces", "--wait")
	if n, seen := serverDiscoveries(discoveriesSince(t, audit, since)); n != 1 {
		t.Errorf("the server asked for the API groups %d times during one restore, want once; requests: %q", n, seen)
	}
	got := &corev1.ConfigMap{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "app-copy", Name: "settings"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Data["a"] != "b" {
		t.Errorf("restored config map app-copy/settings holds %v, want a=b", got.Data)
	}
}
