package plugin

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/internal/testbin"
)

func TestList(t *testing.T) {
	dir := t.TempDir()
	bin, err := testbin.Build(filepath.Join(dir, "nested"), "backup-action", "./examples/backup-action")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		check func(t *testing.T, out string)
	}{
		{[]string{"list", "--plugin-dir", dir, "--include-builtin=false"}, func(t *testing.T, out string) {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "KIND") {
				t.Fatalf("table:\n%s", out)
			}
			if f := strings.Fields(lines[1]); len(f) != 3 || f[0] != "BackupItemAction" || f[1] != "example.io/backup-annotate" || f[2] != bin {
				t.Errorf("row %q", lines[1])
			}
		}},
		{[]string{"list", "--plugin-dir", dir, "-o", "json", "--include-builtin=false"}, func(t *testing.T, out string) {
			var got []map[string]string
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if len(got) != 1 || got[0]["kind"] != "BackupItemAction" || got[0]["name"] != "example.io/backup-annotate" || got[0]["binary"] != bin {
				t.Errorf("JSON %v", got)
			}
		}},
		{[]string{"list", "--plugin-dir", dir, "-o", "yaml", "--include-builtin=false"}, func(t *testing.T, out string) {
			if !strings.Contains(out, "- binary: "+bin+"\n  kind: BackupItemAction\n  name: example.io/backup-annotate\n") {
				t.Errorf("YAML:\n%s", out)
			}
		}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			cmd := NewCommand(&kube.Options{})
			cmd.SetArgs(tc.args)
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			if err := cmd.Execute(); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			tc.check(t, out.String())
		})
	}
}

func TestListErrors(t *testing.T) {
	empty := t.TempDir()
	dup := t.TempDir()
	for _, sub := range []string{"a", "b"} {
		if _, err := testbin.Build(filepath.Join(dup, sub), "restore-action", "./examples/restore-action"); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"list"}, []string{`required flag(s) "plugin-dir" not set`}},
		{[]string{"list", "--plugin-dir", empty, "-o", "xml"}, []string{`--output "xml": must be table, json or yaml`}},
		{[]string{"list", "--plugin-dir", filepath.Join(empty, "missing")}, []string{"--plugin-dir: stat " + filepath.Join(empty, "missing") + ": no such file"}},
		{[]string{"list", "--plugin-dir", dup, "--include-builtin=false"}, []string{`RestoreItemAction "example.io/restore-label" is served by both`,
			filepath.Join(dup, "a", "restore-action"), filepath.Join(dup, "b", "restore-action")}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := NewCommand(&kube.Options{})
			cmd.SetArgs(tc.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if err == nil {
				t.Fatal("succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// An empty directory lists nothing, without error.
	cmd := NewCommand(&kube.Options{})
	var out bytes.Buffer
	cmd.SetArgs([]string{"list", "--plugin-dir", empty, "-o", "json", "--include-builtin=false"})
	cmd.SetOut(&out)
	if err := cmd.Execute(); err != nil || strings.TrimSpace(out.String()) != "[]" {
		t.Errorf("empty directory: %q, %v", out.String(), err)
	}
}

func TestListIncludesBuiltins(t *testing.T) {
	dir := t.TempDir()
	salvor, err := testbin.Build(t.TempDir(), "salvor", "./cmd/salvor")
	if err != nil {
		t.Fatal(err)
	}
	saved := Builtin
	Builtin = func() (host.Command, error) { return host.Command{Path: salvor, Args: []string{"run-plugins"}}, nil }
	t.Cleanup(func() { Builtin = saved })
	var out bytes.Buffer
	cmd := NewCommand(&kube.Options{})
	cmd.SetArgs([]string{"list", "--plugin-dir", dir})
	cmd.SetOut(&out)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(out.String(), "\n") {
		rows[strings.Join(strings.Fields(line), " ")] = true
	}
	for _, want := range []string{"ObjectStore salvor.dev/filesystem " + salvor, "ObjectStore salvor.dev/s3 " + salvor,
		"VolumeSnapshotterV2 salvor.dev/local-volume " + salvor} {
		if !rows[want] {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
