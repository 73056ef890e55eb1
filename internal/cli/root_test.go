package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubecontextIsContext: Velero's --kubecontext is --context, before the
// command or after it, so a Velero runbook line picks the cluster it names.
func TestKubecontextIsContext(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\ncontexts: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--kubecontext", "prod-east", "backup", "get"},
		{"get", "backups", "--kubecontext=prod-east"},
		{"describe", "backups", "b1", "--context", "prod-east"},
	} {
		root := NewRootCommand()
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		root.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), `context "prod-east" does not exist`) {
			t.Errorf("salvor %s: want the kubeconfig's context prod-east looked for, got %v", strings.Join(args, " "), err)
		}
	}
}
