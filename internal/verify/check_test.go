package verify

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/persistence/persistencetest"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// storedBackup writes backup b1 as a backup does — tarball with its item
// digests, files, manifest, metadata last — with two config maps, and
// returns the store and the directory its objects are in.
func storedBackup(t *testing.T, list map[string][]string) (*persistence.BackupStore, string) {
	t.Helper()
	ctx := context.Background()
	store, root := persistencetest.OnDisk(t, "team")
	items, err := persistence.NewItemDigests()
	if err != nil {
		t.Fatal(err)
	}
	var tarball bytes.Buffer
	w, err := archive.NewWriter(&tarball, items.Observe)
	if err != nil {
		t.Fatal(err)
	}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for _, name := range []string{"a", "b"} {
		if err := w.WriteItem(cms, "app", name, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","namespace":"app"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := store.PutTarballDigested(ctx, "b1", &tarball, items); err != nil {
		t.Fatal(err)
	}
	b := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: "salvor", UID: "u1"},
		Status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseCompleted}}
	if err := store.FinishBackup(ctx, persistence.Finish{Backup: b, ResourceList: list, ItemOperations: []any{}}); err != nil {
		t.Fatal(err)
	}
	return store, filepath.Join(root, persistencetest.Bucket, "team", "backups", "b1")
}

// TestCheck: a stored backup passes as written; each way its objects can
// differ from what was written fails it, naming the object and what
// differs; a backup without a manifest is read and parsed, and says that
// no checksum could be checked.
func TestCheck(t *testing.T) {
	whole := map[string][]string{"v1/ConfigMap": {"app/a", "app/b"}}
	for _, tc := range []struct {
		name   string
		list   map[string][]string
		change func(t *testing.T, dir string)
		// fails are what the failures say, one each; none: it passes.
		fails    []string
		manifest bool
		items    int
	}{
		{name: "as written", list: whole, manifest: true, items: 2},
		{name: "the tarball replaced", list: whole, manifest: true, change: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "b1.tar.gz"), "not a tarball")
		}, fails: []string{"b1.tar.gz: changed (does not read whole", "item resources/configmaps/namespaces/app/a.json is in the manifest but not in the tarball",
			"the resource list names v1/ConfigMap app/b, which the tarball does not hold"}},
		{name: "the results removed", list: whole, manifest: true, change: func(t *testing.T, dir string) {
			remove(t, filepath.Join(dir, "b1-results.gz"))
		}, items: 2, fails: []string{"b1-results.gz: missing"}},
		{name: "the resource list rewritten", list: whole, manifest: true, change: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "b1-resource-list.json.gz"), "x")
		}, items: 2, fails: []string{"b1-resource-list.json.gz: changed (1 bytes"}},
		{name: "an item the resource list leaves out", list: map[string][]string{"v1/ConfigMap": {"app/a"}}, manifest: true, items: 2,
			fails: []string{"b1.tar.gz: ", "app/b"}},
		{name: "no manifest", list: whole, items: 2, change: func(t *testing.T, dir string) {
			remove(t, filepath.Join(dir, "b1-salvor-manifest.json.gz"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, dir := storedBackup(t, tc.list)
			if tc.change != nil {
				tc.change(t, dir)
			}
			r, err := Check(context.Background(), store, "b1", "u1")
			if err != nil {
				t.Fatal(err)
			}
			if r.Manifest != tc.manifest {
				t.Errorf("manifest %v, want %v (%s)", r.Manifest, tc.manifest, r.Checked)
			}
			if !tc.manifest && !strings.Contains(r.Checked, "no checksum could be checked") {
				t.Errorf("checked: %s", r.Checked)
			}
			if r.Items != tc.items {
				t.Errorf("%d items read, want %d", r.Items, tc.items)
			}
			if len(tc.fails) == 0 {
				if !r.Passed() {
					t.Errorf("failures: %q", r.Failures)
				}
				return
			}
			joined := strings.Join(r.Failures, "\n")
			for _, want := range tc.fails {
				if !strings.Contains(joined, want) {
					t.Errorf("failures %q: want one saying %q", r.Failures, want)
				}
			}
		})
	}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}
