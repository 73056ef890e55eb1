// Command benchplugin is the benchmark's BackupItemActionV2 built with
// Salvor's SDK: the same action as compat.velero.io/bench in the Velero
// plugin, so the two frameworks are compared on equal work.
package main

import (
	"log/slog"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

func main() {
	sdk.NewServer().
		RegisterBackupItemActionV2("compat.salvor.dev/bench", func(*slog.Logger) (sdk.BackupItemActionV2, error) { return bench{}, nil }).
		Serve()
}

type bench struct{}

func (bench) Name() string                             { return "compat.salvor.dev/bench" }
func (bench) AppliesTo() (sdk.ResourceSelector, error) { return sdk.ResourceSelector{}, nil }

func (bench) Execute(item runtime.Unstructured, _ *sdk.Backup) (runtime.Unstructured, []sdk.ResourceIdentifier, string, []sdk.ResourceIdentifier, error) {
	obj := item.(*unstructured.Unstructured).DeepCopy()
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["compat/by"] = "bench"
	obj.SetAnnotations(ann)
	return obj, nil, "", nil, nil
}

func (bench) Progress(string, *sdk.Backup) (sdk.OperationProgress, error) {
	return sdk.OperationProgress{}, nil
}
func (bench) Cancel(string, *sdk.Backup) error { return nil }
