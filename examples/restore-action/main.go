// Command restore-action is a RestoreItemAction (v1): it labels restored
// items with the restore's name and leaves out items annotated
// example.io/skip-restore=true in the backup.
package main

import (
	"log/slog"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

func main() {
	sdk.NewServer().
		RegisterRestoreItemAction("example.io/restore-label", func(*slog.Logger) (sdk.RestoreItemAction, error) {
			return label{}, nil
		}).
		Serve()
}

type label struct{}

func (label) AppliesTo() (sdk.ResourceSelector, error) { return sdk.ResourceSelector{}, nil }

func (label) Execute(in *sdk.RestoreItemActionExecuteInput) (*sdk.RestoreItemActionExecuteOutput, error) {
	// Decide from the item as it was backed up: earlier actions may have
	// changed the one about to be restored.
	if in.ItemFromBackup.(*unstructured.Unstructured).GetAnnotations()["example.io/skip-restore"] == "true" {
		return sdk.NewRestoreItemActionExecuteOutput(in.Item).WithoutRestore(), nil
	}
	obj := in.Item.(*unstructured.Unstructured).DeepCopy()
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["example.io/restored-by"] = in.Restore.Name
	obj.SetLabels(labels)
	return sdk.NewRestoreItemActionExecuteOutput(obj), nil
}
