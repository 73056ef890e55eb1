package plugintest

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

func TestStart(t *testing.T) {
	m := Start(t, "../../../examples/restore-action", Options{})
	if l := m.List(); len(l) != 1 || l[0].Name != "example.io/restore-label" {
		t.Fatalf("discovered %v", l)
	}
	a, err := Get[RestoreItemAction](context.Background(), m, "example.io/restore-label", nil)
	if err != nil {
		t.Fatal(err)
	}
	item := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}}
	restore := &api.Restore{}
	restore.Name = "r"
	res, err := a.Execute(context.Background(), RestoreInput{Item: item, ItemFromBackup: item, Restore: restore})
	if err != nil || res.Item.GetLabels()["example.io/restored-by"] != "r" {
		t.Errorf("Execute = %+v, %v", res, err)
	}
	// Asked as another kind, the same name is not found; asked as a type
	// that is no plugin interface, Get says so.
	if _, err := Get[BackupItemAction](context.Background(), m, "example.io/restore-label", nil); err == nil ||
		!strings.Contains(err.Error(), `no BackupItemActionV2 named "example.io/restore-label"`) {
		t.Errorf("as a BackupItemAction: %v", err)
	}
	if _, err := Get[interface{ Name() string }](context.Background(), m, "example.io/restore-label", nil); err == nil ||
		!strings.Contains(err.Error(), "is not a plugin interface") {
		t.Errorf("as no plugin interface: %v", err)
	}
}
