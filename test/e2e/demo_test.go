package e2e

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salvor-dev/salvor/internal/demo"
	"github.com/salvor-dev/salvor/internal/testbed"
	"github.com/salvor-dev/salvor/internal/testbin"
)

// TestDemo runs the program `make demo` runs and checks its verdict.
func TestDemo(t *testing.T) {
	t.Parallel()
	plugins := pluginDirOf(t, examplePlugins...)
	tb, err := testbed.Dir()
	if err != nil {
		t.Fatal(err)
	}
	root, _ := testbin.ModuleRoot()
	var out bytes.Buffer
	err = demo.Run(context.Background(), demo.Options{
		Salvor: salvorBin, PluginDir: plugins, Testbed: tb, CRDs: filepath.Join(root, "config", "crd"), Out: &out,
	})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	// Compare with runs of spaces folded: the summary is a table.
	folded := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{demo.Verdict, "objects checked 40, 0 differing", "plugin operations 2 of 2 completed",
		"$ salvor backup create demo", "$ salvor restore create demo-restore --from-backup demo --wait",
		"pod volume backups 1 of 1 completed, 256 MiB into the bucket", "PodVolumeBackup", "pod demo-shop/files volume data",
		"pod demo-shop/files running again, its files written by the node agent before it started: 256 of 256 files identical (sha256)"} {
		if !strings.Contains(folded, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestDemoCSI runs the program `make demo-csi` runs and checks its verdict.
func TestDemoCSI(t *testing.T) {
	t.Parallel()
	tb, err := testbed.Dir()
	if err != nil {
		t.Fatal(err)
	}
	root, _ := testbin.ModuleRoot()
	var out bytes.Buffer
	err = demo.RunCSI(context.Background(), demo.Options{Salvor: salvorBin, Testbed: tb, CRDs: filepath.Join(root, "config", "crd"), Out: &out})
	if err != nil {
		t.Fatalf("demo-csi: %v\n%s", err, out.String())
	}
	folded := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{demo.CSIVerdict, "$ salvor backup create shop-offsite --include-namespaces shop --snapshot-move-data --wait",
		"the driver holds no snapshot", "0 snapshot(s) lost with the storage", "$ salvor restore create shop-back --from-backup shop-offsite --wait",
		"salvor.dev/csi shop/data: Completed", "64 of 64 files identical (sha256)", "PodVolumeBackup", "pod shop/web volume uploads",
		"pod shop/web running again, its files written by the node agent before it started: 64 of 64 files identical (sha256)"} {
		if !strings.Contains(folded, want) {
			t.Errorf("demo-csi output lacks %q:\n%s", want, out.String())
		}
	}
}
