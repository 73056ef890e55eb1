package plugintest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsableFromAnotherModule compiles a plugin author's test in a module
// of its own, outside Salvor's import path, as docs/plugins.md shows it:
// Go refuses imports of Salvor's internal packages there, so this fails if
// the helper's surface ever needs one.
func TestUsableFromAnotherModule(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/myplugin\n\ngo 1.26.0\n\nrequire github.com/salvor-dev/salvor v0.0.0\n\nreplace github.com/salvor-dev/salvor => "+root+"\n")
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sum))
	write("plugin_test.go", `package myplugin

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/pkg/plugin/api"
	"github.com/salvor-dev/salvor/pkg/plugin/plugintest"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

func TestMyAction(t *testing.T) {
	m := plugintest.Start(t, ".", plugintest.Options{})
	a, err := plugintest.Get[plugintest.BackupItemAction](context.Background(), m, "example.io/my-action", nil)
	if err != nil {
		t.Fatal(err)
	}
	var res plugintest.BackupResult
	res, err = a.Execute(context.Background(), &unstructured.Unstructured{}, &api.Backup{})
	_, _ = res, err
	r, _ := plugintest.Get[plugintest.RestoreItemAction](context.Background(), m, "example.io/other", nil)
	_, _ = r.Execute(context.Background(), plugintest.RestoreInput{})
	in := plugintest.StartInProcess(t, sdk.NewServer(), plugintest.Options{})
	_, _ = plugintest.Get[plugintest.ObjectStore](context.Background(), in, "example.io/store", map[string]string{})
}
`)
	cmd := exec.Command("go", "vet", "-mod=mod", "./...")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("a plugin author's test does not compile against plugintest: %v\n%s", err, strings.TrimSpace(string(out)))
	}
}
