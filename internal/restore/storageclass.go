package restore

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// storageClasses is a restore's storage class mapping; nil maps nothing.
type storageClasses struct {
	// from names the ConfigMap, for messages.
	from string
	to   map[string]string
	// missing are the classes mapped to that this cluster has not: an
	// item mapped to one is an error, never made with a class that cannot
	// provision.
	missing map[string]bool
}

// loadStorageClasses reads the storage class mapping of ConfigMap cm,
// if there is one, and which classes it maps to this cluster has.
func loadStorageClasses(ctx context.Context, dyn dynamic.Interface, cm *unstructured.Unstructured) (*storageClasses, error) {
	if cm == nil {
		return nil, nil
	}
	m := &storageClasses{from: "ConfigMap " + cm.GetNamespace() + "/" + cm.GetName(), to: map[string]string{}, missing: map[string]bool{}}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	classes := dyn.Resource(schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"})
	for from, to := range data {
		m.to[from] = to
		if _, ok := m.missing[to]; ok {
			continue
		}
		_, err := classes.Get(ctx, to, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			m.missing[to] = true
		case err != nil:
			return nil, fmt.Errorf("%s maps storage class %s to %s, which could not be read: %w", m.from, from, to, err)
		default:
			m.missing[to] = false
		}
	}
	return m, nil
}

// Apply maps the storage classes an item names, and says which. An item
// mapped to a class this cluster has not is an error, and is not restored.
func (m *storageClasses) Apply(gr schema.GroupResource, obj *unstructured.Unstructured) (changed []string, err error) {
	if m == nil {
		return nil, nil
	}
	mapOne := func(fields map[string]any, path ...string) error {
		from, _, _ := unstructured.NestedString(fields, path...)
		to, ok := m.to[from]
		if from == "" || !ok {
			return nil
		}
		if m.missing[to] {
			return fmt.Errorf("%s maps its storage class %s to %s, which this cluster does not have: create it, or change the mapping", m.from, from, to)
		}
		changed = append(changed, from+" → "+to)
		return unstructured.SetNestedField(fields, to, path...)
	}
	switch gr {
	case schema.GroupResource{Resource: "persistentvolumeclaims"}, schema.GroupResource{Resource: "persistentvolumes"}:
		err = mapOne(obj.Object, "spec", "storageClassName")
	case schema.GroupResource{Group: "apps", Resource: "statefulsets"}:
		templates, _, _ := unstructured.NestedSlice(obj.Object, "spec", "volumeClaimTemplates")
		for _, t := range templates {
			if tm, ok := t.(map[string]any); ok && err == nil {
				err = mapOne(tm, "spec", "storageClassName")
			}
		}
		if err == nil && len(changed) > 0 {
			err = unstructured.SetNestedSlice(obj.Object, templates, "spec", "volumeClaimTemplates")
		}
	}
	return changed, err
}
