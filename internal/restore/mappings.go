package restore

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// A restore into another cluster often needs names the backup holds
// changed: storage classes (another cloud, a new provisioner) and image
// registries (a mirror, an air-gapped registry). Velero users already say
// so in ConfigMaps of Velero's server namespace, labelled
// velero.io/plugin-config and one of velero.io/change-storage-class or
// velero.io/change-image-name, each =RestoreItemAction; Salvor reads the
// same ConfigMaps from its own namespace, once per restore, so a restore
// follows the mapping as it was when the restore started.
const (
	pluginConfigLabel       = "velero.io/plugin-config"
	changeStorageClassLabel = "velero.io/change-storage-class"
	changeImageNameLabel    = "velero.io/change-image-name"
	// storageClassMapSelector selects the storage class mapping.
	storageClassMapSelector = pluginConfigLabel + "," + changeStorageClassLabel + "=RestoreItemAction"
	// imageNameMapSelector selects the image name mapping.
	imageNameMapSelector = pluginConfigLabel + "," + changeImageNameLabel + "=RestoreItemAction"
)

// Mappings is what a restore changes in the items it makes, as the
// ConfigMaps say; nil changes nothing.
type Mappings struct {
	classes *storageClasses
	images  *imageNames
}

// LoadMappings reads the mappings configured in namespace. A mapping two
// ConfigMaps configure, or one that cannot be read as a mapping, is a
// problem the user must fix, one of problems: which one would apply, or
// what it means, is not for the restore to guess. err is a failure to
// read, worth trying again.
func LoadMappings(ctx context.Context, dyn dynamic.Interface, namespace string) (m *Mappings, problems []string, err error) {
	classMap, problems, err := pluginConfig(ctx, dyn, namespace, storageClassMapSelector, "map storage classes")
	if err != nil {
		return nil, nil, err
	}
	classes, err := loadStorageClasses(ctx, dyn, classMap)
	if err != nil {
		return nil, nil, err
	}
	imageMap, more, err := pluginConfig(ctx, dyn, namespace, imageNameMapSelector, "map image names")
	if err != nil {
		return nil, nil, err
	}
	problems = append(problems, more...)
	images, err := parseImageNames(imageMap)
	if err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 || classes == nil && images == nil {
		return nil, problems, nil
	}
	return &Mappings{classes: classes, images: images}, nil, nil
}

// Apply changes what the mappings change in an item, and says what. An
// item the mappings would make unusable (a storage class this cluster has
// not) is an error, and is not to be restored.
func (m *Mappings) Apply(gr schema.GroupResource, obj *unstructured.Unstructured) ([]string, error) {
	if m == nil {
		return nil, nil
	}
	changed, err := m.classes.Apply(gr, obj)
	if err != nil {
		return nil, err
	}
	images, err := m.images.Apply(gr, obj)
	return append(changed, images...), err
}

// pluginConfig returns the ConfigMap in namespace that selector selects,
// nil if there is none, and the problem if there are more.
func pluginConfig(ctx context.Context, dyn dynamic.Interface, namespace, selector, does string) (cm *unstructured.Unstructured, problems []string, err error) {
	list, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(namespace).
		List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, nil, fmt.Errorf("reading the ConfigMaps in %s labelled %s: %w", namespace, selector, err)
	}
	switch len(list.Items) {
	case 0:
		return nil, nil, nil
	case 1:
		return &list.Items[0], nil, nil
	}
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.GetName())
	}
	sort.Strings(names)
	return nil, []string{fmt.Sprintf("ConfigMaps %s in %s all %s (labelled %s): keep one", strings.Join(names, ", "), namespace, does, selector)}, nil
}
