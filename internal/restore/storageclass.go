package restore

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// A restore into a cluster whose storage classes have other names (another
// cloud, a new provisioner) maps them as Velero users already do: a
// ConfigMap in the restore's namespace labelled velero.io/plugin-config and
// velero.io/change-storage-class=RestoreItemAction, whose data maps a
// backed-up class to the one to restore with. It applies to claims,
// volumes and StatefulSets' claim templates.
const (
	pluginConfigLabel       = "velero.io/plugin-config"
	changeStorageClassLabel = "velero.io/change-storage-class"
	// StorageClassMapSelector selects the ConfigMap.
	StorageClassMapSelector = pluginConfigLabel + "," + changeStorageClassLabel + "=RestoreItemAction"
)

// StorageClasses is a restore's storage class mapping; nil maps nothing.
type StorageClasses struct {
	// from names the ConfigMap, for messages.
	from string
	to   map[string]string
	// missing are the classes mapped to that this cluster has not: an
	// item mapped to one is an error, never made with a class that cannot
	// provision.
	missing map[string]bool
}

// LoadStorageClasses reads the mapping in namespace, if there is one. Two
// ConfigMaps configuring it are an error: which one would apply is not
// for the restore to guess.
func LoadStorageClasses(ctx context.Context, dyn dynamic.Interface, namespace string) (*StorageClasses, error) {
	list, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(namespace).
		List(ctx, metav1.ListOptions{LabelSelector: StorageClassMapSelector})
	if err != nil {
		return nil, fmt.Errorf("reading the storage class mapping (ConfigMaps in %s labelled %s): %w", namespace, StorageClassMapSelector, err)
	}
	switch len(list.Items) {
	case 0:
		return nil, nil
	case 1:
	default:
		var names []string
		for _, cm := range list.Items {
			names = append(names, cm.GetName())
		}
		sort.Strings(names)
		return nil, fmt.Errorf("ConfigMaps %s in %s all map storage classes (labelled %s): keep one", strings.Join(names, ", "), namespace, StorageClassMapSelector)
	}
	cm := list.Items[0]
	m := &StorageClasses{from: "ConfigMap " + namespace + "/" + cm.GetName(), to: map[string]string{}, missing: map[string]bool{}}
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
func (m *StorageClasses) Apply(gr schema.GroupResource, obj *unstructured.Unstructured) (changed []string, err error) {
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
