package backup

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

var (
	salvorUploads = salvorv1.GroupVersion.WithResource("datauploads")
	// veleroUploads is where Velero 1.18 keeps a moved claim's DataUpload
	// in a backup: its restore always reads them, whatever its filters,
	// and restores each claim annotated velero.io/data-upload-name from
	// the kopia snapshot its DataUpload names.
	veleroUploads = schema.GroupVersionResource{Group: "velero.io", Version: "v2alpha1", Resource: "datauploads"}
)

// veleroCopies returns, for each completed DataUpload among the items
// read again at finalizing, the same upload as Velero's DataUpload, so
// that Velero's restore brings the claim's data back from the kopia
// snapshot Salvor's mover made (same repository layout, same snapshot
// source): Velero's field names, dataMover "velero" (its built-in mover,
// which reads Salvor's repositories), the node OS Velero asks for.
// Salvor's own restores leave these out (resources.NotRestored).
func veleroCopies(items []freshItem) ([]freshItem, error) {
	var out []freshItem
	for _, it := range items {
		if it.gvr != salvorUploads {
			continue
		}
		var du map[string]any
		if err := json.Unmarshal(it.body, &du); err != nil {
			return nil, fmt.Errorf("DataUpload %s/%s: %w", it.namespace, it.name, err)
		}
		status, _ := du["status"].(map[string]any)
		if status["phase"] != string(salvorv1.DataMoverPhaseCompleted) || status["snapshotID"] == "" || status["snapshotID"] == nil {
			continue
		}
		meta, _ := du["metadata"].(map[string]any)
		spec, _ := du["spec"].(map[string]any)
		if spec == nil {
			continue
		}
		copied := map[string]any{}
		for k, v := range spec {
			copied[k] = v
		}
		copied["dataMover"] = "velero"
		st := map[string]any{}
		for k, v := range status {
			st[k] = v
		}
		if st["nodeOS"] == nil {
			st["nodeOS"] = "linux"
		}
		v := map[string]any{
			"apiVersion": veleroUploads.GroupVersion().String(), "kind": "DataUpload",
			"metadata": map[string]any{"name": it.name, "namespace": it.namespace, "labels": meta["labels"]},
			"spec":     copied, "status": st,
		}
		body, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out = append(out, freshItem{gvr: veleroUploads, namespace: it.namespace, name: it.name, body: body})
	}
	return out, nil
}

// withListed adds items to a backup's resource list (by "<apiVersion>/<Kind>",
// entries "<namespace>/<name>"), each once.
func withListed(list map[string][]string, items []freshItem, kind string) map[string][]string {
	if list == nil {
		list = map[string][]string{}
	}
	for _, it := range items {
		key := it.gvr.GroupVersion().String() + "/" + kind
		entry := it.namespace + "/" + it.name
		found := false
		for _, e := range list[key] {
			found = found || e == entry
		}
		if !found {
			list[key] = append(list[key], entry)
		}
	}
	return list
}
