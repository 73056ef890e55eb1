package sdk_test

import (
	"fmt"
	"log/slog"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

// skipMarked is a RestoreItemAction: it leaves out items the backup marked
// example.io/skip-restore=true and labels the rest with the restore's name.
type skipMarked struct{ log *slog.Logger }

// AppliesTo asks for ConfigMaps only: the host calls Execute for no other
// item.
func (skipMarked) AppliesTo() (sdk.ResourceSelector, error) {
	return sdk.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}

func (a skipMarked) Execute(in *sdk.RestoreItemActionExecuteInput) (*sdk.RestoreItemActionExecuteOutput, error) {
	// Decide from the item as the backup holds it: earlier actions may
	// have changed in.Item.
	if in.ItemFromBackup.(*unstructured.Unstructured).GetAnnotations()["example.io/skip-restore"] == "true" {
		return sdk.NewRestoreItemActionExecuteOutput(in.Item).WithoutRestore(), nil
	}
	obj := in.Item.(*unstructured.Unstructured).DeepCopy()
	obj.SetLabels(map[string]string{"example.io/restored-by": in.Restore.Name})
	return sdk.NewRestoreItemActionExecuteOutput(obj), nil
}

// A plugin binary's main registers its implementations and serves them;
// Serve then blocks until the host stops the process. Before Serve, a
// server says what it will serve, and Err reports a mistake (an invalid or
// duplicate name) that would make Serve exit.
func Example() {
	srv := sdk.NewServer().
		RegisterRestoreItemAction("example.io/skip-marked", func(log *slog.Logger) (sdk.RestoreItemAction, error) {
			return skipMarked{log: log}, nil
		})
	if err := srv.Err(); err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range srv.Plugins() {
		fmt.Println(p.Kind, p.Name)
	}
	// In main: srv.Serve()

	// The implementation is plain Go: call it as the host would.
	item := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "shop"},
	}}
	restore := &sdk.Restore{}
	restore.Name = "nightly-1"
	out, _ := skipMarked{}.Execute(&sdk.RestoreItemActionExecuteInput{Item: item, ItemFromBackup: item, Restore: restore})
	fmt.Println(out.UpdatedItem.(*unstructured.Unstructured).GetLabels(), out.SkipRestore)

	item.SetAnnotations(map[string]string{"example.io/skip-restore": "true"})
	out, _ = skipMarked{}.Execute(&sdk.RestoreItemActionExecuteInput{Item: item, ItemFromBackup: item, Restore: restore})
	fmt.Println(out.SkipRestore)
	// Output:
	// RestoreItemAction example.io/skip-marked
	// map[example.io/restored-by:nightly-1] false
	// true
}

// Registration mistakes are collected, not panicked on: Err names each,
// and Serve exits with it.
func ExampleServer_Err() {
	newAction := func(*slog.Logger) (sdk.RestoreItemAction, error) { return skipMarked{}, nil }
	srv := sdk.NewServer().
		RegisterRestoreItemAction("example.io/a", newAction).
		RegisterRestoreItemAction("example.io/a", newAction)
	fmt.Println(srv.Err())
	// Output: plugin registration: RestoreItemAction plugin "example.io/a" is registered twice
}
