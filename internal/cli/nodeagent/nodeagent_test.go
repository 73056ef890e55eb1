package nodeagent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salvor-dev/salvor/internal/nodeagent"
)

// TestServerChecksItsMounts: `node-agent server` names the flag to fix,
// before it connects to anything, when the node is unknown or the node's
// pods directory is not mounted where its flags say; it makes its work
// directory.
func TestServerChecksItsMounts(t *testing.T) {
	dir := t.TempDir()
	pods, writable, file := filepath.Join(dir, "pods"), filepath.Join(dir, "pods-rw"), filepath.Join(dir, "file")
	for _, d := range []string{pods, writable} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name               string
		node, env          string
		hostPods, writable string
		refused            string // "" when accepted
		wantNode           string
	}{
		{name: "flags", node: "n1", hostPods: pods, writable: writable, wantNode: "n1"},
		{name: "node from the pod", env: "n2", hostPods: pods, writable: writable, wantNode: "n2"},
		{name: "flag over the pod", node: "n1", env: "n2", hostPods: pods, writable: writable, wantNode: "n1"},
		{name: "no node", hostPods: pods, writable: writable, refused: "--node: name the node this agent runs on"},
		{name: "pods not mounted", node: "n1", hostPods: filepath.Join(dir, "absent"), writable: writable, refused: "--host-pods " + filepath.Join(dir, "absent") + ": the node's kubelet pods directory must be mounted there (stat "},
		{name: "pods a file", node: "n1", hostPods: file, writable: writable, refused: "--host-pods " + file + ": the node's kubelet pods directory must be mounted there (file is not a directory)"},
		{name: "writable not mounted", node: "n1", hostPods: pods, writable: filepath.Join(dir, "absent"), refused: "--host-pods-writable " + filepath.Join(dir, "absent") + ": the node's kubelet pods directory must be mounted there read-write"},
	} {
		a := &nodeagent.Agent{Node: tc.node, HostPods: tc.hostPods, WorkDir: filepath.Join(dir, tc.name, "work")}
		o := &serverOptions{agent: a, restorer: &nodeagent.Restorer{Agent: a, HostPodsWritable: tc.writable}}
		err := o.complete(func(key string) string {
			if key == "NODE_NAME" {
				return tc.env
			}
			return ""
		})
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.refused)
			}
			if _, statErr := os.Stat(a.WorkDir); statErr == nil {
				t.Errorf("%s: refused, yet made its work directory", tc.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if a.Node != tc.wantNode {
			t.Errorf("%s: serves node %q, want %q", tc.name, a.Node, tc.wantNode)
		}
		if fi, err := os.Stat(a.WorkDir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: work directory %v %v, want a directory only its owner reads", tc.name, fi, err)
		}
	}
}
