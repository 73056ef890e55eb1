package restore

import (
	"cmp"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// imageNames is a restore's image name mapping (Velero's
// change-image-name): each row of the ConfigMap's data is "old,new", and
// an image that holds old has every old in it replaced by new — a
// registry moved (registry.a:5000,registry.b), a repository renamed, a
// tag pinned. Where several rows match an image, the one whose old part is
// longest (the most specific) applies, and among those the first by key;
// Velero picks one of them at random. nil maps nothing.
type imageNames struct {
	rows []imageRow
}

type imageRow struct{ key, old, new string }

// parseImageNames reads the image name mapping of ConfigMap cm, if there
// is one. A row that is not "old,new" fails the restore: ignored, as
// Velero ignores it, it would restore images the user meant to move.
func parseImageNames(cm *unstructured.Unstructured) (*imageNames, error) {
	if cm == nil {
		return nil, nil
	}
	m, from := &imageNames{}, "ConfigMap "+cm.GetNamespace()+"/"+cm.GetName()
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	for key, row := range data {
		old, new, ok := strings.Cut(row, ",")
		old, new = strings.TrimSpace(old), strings.TrimSpace(new)
		if !ok || old == "" || new == "" || strings.Contains(new, ",") {
			return nil, fmt.Errorf(`%s maps image names, but its key %s holds %q: write "old,new" (the part of an image name to replace, a comma, and what replaces it)`, from, key, row)
		}
		m.rows = append(m.rows, imageRow{key, old, new})
	}
	sort.Slice(m.rows, func(i, j int) bool {
		a, b := m.rows[i], m.rows[j]
		return cmp.Or(cmp.Compare(len(b.old), len(a.old)), cmp.Compare(a.key, b.key)) < 0
	})
	return m, nil
}

// podSpecs are where each workload resource keeps its pod spec, as
// Velero's change-image-name applies to them.
var podSpecs = map[schema.GroupResource][]string{
	{Resource: "pods"}:                        {"spec"},
	{Resource: "replicationcontrollers"}:      {"spec", "template", "spec"},
	{Group: "apps", Resource: "deployments"}:  {"spec", "template", "spec"},
	{Group: "apps", Resource: "statefulsets"}: {"spec", "template", "spec"},
	{Group: "apps", Resource: "daemonsets"}:   {"spec", "template", "spec"},
	{Group: "apps", Resource: "replicasets"}:  {"spec", "template", "spec"},
	{Group: "batch", Resource: "jobs"}:        {"spec", "template", "spec"},
	{Group: "batch", Resource: "cronjobs"}:    {"spec", "jobTemplate", "spec", "template", "spec"},
}

// Apply maps the images of an item's containers and init containers, and
// says which.
func (m *imageNames) Apply(gr schema.GroupResource, obj *unstructured.Unstructured) (changed []string, err error) {
	spec, ok := podSpecs[gr]
	if m == nil || !ok {
		return nil, nil
	}
	for _, field := range []string{"containers", "initContainers"} {
		path := append(spec[:len(spec):len(spec)], field)
		containers, found, _ := unstructured.NestedSlice(obj.Object, path...)
		n := len(changed)
		for _, c := range containers {
			container, _ := c.(map[string]any)
			image, _ := container["image"].(string)
			if to := m.mapImage(image); to != image {
				container["image"] = to
				changed = append(changed, image+" → "+to)
			}
		}
		if found && len(changed) > n {
			if err := unstructured.SetNestedSlice(obj.Object, containers, path...); err != nil {
				return nil, err
			}
		}
	}
	return changed, nil
}

func (m *imageNames) mapImage(image string) string {
	for _, r := range m.rows {
		if image != "" && strings.Contains(image, r.old) {
			return strings.ReplaceAll(image, r.old, r.new)
		}
	}
	return image
}
