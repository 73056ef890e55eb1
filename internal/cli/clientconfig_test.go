package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientConfig: `salvor client config set namespace=NS` (Velero's
// command) makes NS the namespace of every command that is not given
// --namespace, $SALVOR_NAMESPACE comes before it; keys Salvor has not are
// refused, naming the ones it has; an empty value removes a key.
func TestClientConfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SALVOR_CONFIG", filepath.Join(dir, "salvor", "config.json"))
	t.Setenv("SALVOR_NAMESPACE", "")
	// A cluster nobody answers at: the commands below print, and never call it.
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		t.Helper()
		root := NewRootCommand()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
		err := root.Execute()
		return out.String(), err
	}
	namespace := func(args ...string) string {
		t.Helper()
		out, err := run(append([]string{"backup", "create", "b1", "-o", "yaml"}, args...)...)
		if err != nil {
			t.Fatalf("backup create -o yaml: %v\n%s", err, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if ns, ok := strings.CutPrefix(l, "  namespace: "); ok {
				return ns
			}
		}
		t.Fatalf("no namespace in\n%s", out)
		return ""
	}

	if ns := namespace(); ns != "salvor" {
		t.Errorf("without a client config: namespace %q", ns)
	}
	if out, err := run("client", "config", "set", "namespace=backup-system", "cacert="+ca); err != nil || !strings.Contains(out, "saved") {
		t.Fatalf("client config set: %v\n%s", err, out)
	}
	if out, err := run("client", "config", "get"); err != nil || out != "cacert: "+ca+"\nnamespace: backup-system\n" {
		t.Errorf("client config get: %v\n%s", err, out)
	}
	if ns := namespace(); ns != "backup-system" {
		t.Errorf("with the client config's namespace: %q", ns)
	}
	if ns := namespace("-n", "flagged"); ns != "flagged" {
		t.Errorf("--namespace over the client config: %q", ns)
	}
	t.Setenv("SALVOR_NAMESPACE", "from-env")
	if ns := namespace(); ns != "from-env" {
		t.Errorf("$SALVOR_NAMESPACE over the client config: %q", ns)
	}
	t.Setenv("SALVOR_NAMESPACE", "")

	for args, want := range map[string]string{
		"colorized=false":    "colorized is Velero's: Salvor's output has no colours",
		"features=EnableCSI": "features is Velero's: Salvor has no feature flags",
		"nmespace=x":         `no client config key "nmespace": the keys are cacert, namespace`,
		"namespace=Bad_NS":   `namespace "Bad_NS"`,
		"namespace":          `"namespace": want KEY=VALUE`,
		"cacert=" + filepath.Join(dir, "missing.pem"): "cacert: stat",
	} {
		if out, err := run("client", "config", "set", args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("client config set %s: %v, want %q\n%s", args, err, want, out)
		}
	}
	if ns := namespace(); ns != "backup-system" {
		t.Errorf("a refused set changed the namespace to %q", ns)
	}
	if _, err := run("client", "config", "set", "namespace="); err != nil {
		t.Fatal(err)
	}
	if ns := namespace(); ns != "salvor" {
		t.Errorf("after namespace= removed it: %q", ns)
	}
	if out, err := run("client", "config", "get", "namespace"); err != nil || out != "namespace: \n" {
		t.Errorf("client config get namespace after removing it: %v %q", err, out)
	}

	// A broken file is said, with what mends it.
	if err := os.WriteFile(filepath.Join(dir, "salvor", "config.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := run("backup", "get"); err == nil || !strings.Contains(err.Error(), "is not a JSON object of strings (unexpected end of JSON input): salvor client config set KEY=VALUE rewrites it") {
		t.Errorf("a broken client config: %v", err)
	}
	if out, err := run("client", "config", "set", "namespace=mended"); err != nil {
		t.Errorf("set over a broken client config: %v\n%s", err, out)
	}
	if ns := namespace(); ns != "mended" {
		t.Errorf("after set rewrote a broken client config: %q", ns)
	}
	// Keys of someone else's (a hand edit) are not Salvor's to print.
	if err := os.WriteFile(filepath.Join(dir, "salvor", "config.json"), []byte(`{"namespace": "x", "colorized": "true"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run("client", "config", "get"); err != nil || out != "namespace: x\n" {
		t.Errorf("client config get with a key Salvor has not: %v %q", err, out)
	}
}
