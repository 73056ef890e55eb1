// Command backup-action is a BackupItemAction (v1): it annotates every item
// with the backup it belongs to and, for a pod, asks for the pod's
// persistent volume claims to be backed up too.
package main

import (
	"log/slog"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

func main() {
	sdk.NewServer().
		RegisterBackupItemAction("example.io/backup-annotate", func(log *slog.Logger) (sdk.BackupItemAction, error) {
			return &annotate{log: log}, nil
		}).
		Serve()
}

type annotate struct{ log *slog.Logger }

// AppliesTo selects everything but events, which are noise in a backup.
func (a *annotate) AppliesTo() (sdk.ResourceSelector, error) {
	return sdk.ResourceSelector{ExcludedResources: []string{"events", "events.events.k8s.io"}}, nil
}

func (a *annotate) Execute(item runtime.Unstructured, backup *sdk.Backup) (runtime.Unstructured, []sdk.ResourceIdentifier, error) {
	obj, ok := item.(*unstructured.Unstructured)
	if !ok {
		return nil, nil, sdk.Errorf("unexpected item type %T", item)
	}
	obj = obj.DeepCopy()
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["example.io/backup"] = backup.Name
	obj.SetAnnotations(ann)

	var claims []sdk.ResourceIdentifier
	if obj.GetKind() == "Pod" && obj.GetAPIVersion() == "v1" {
		volumes, _, _ := unstructured.NestedSlice(obj.Object, "spec", "volumes")
		for _, v := range volumes {
			claim, _, _ := unstructured.NestedString(v.(map[string]any), "persistentVolumeClaim", "claimName")
			if claim != "" {
				claims = append(claims, sdk.ResourceIdentifier{
					GroupResource: schema.GroupResource{Resource: "persistentvolumeclaims"},
					Namespace:     obj.GetNamespace(),
					Name:          claim,
				})
			}
		}
	}
	a.log.Debug("annotated", "item", obj.GetName(), "claims", len(claims))
	return obj, claims, nil
}
