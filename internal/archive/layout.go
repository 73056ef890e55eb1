package archive

import (
	"path"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FormatVersion is the version of the layout this package writes.
const FormatVersion = "1.1.0"

// VersionFile is the entry holding the format version.
const VersionFile = "metadata/version"

// resourceDir is "resources/<resource>.<group>" ("resources/<resource>" for
// the core group).
func resourceDir(gr schema.GroupResource) string {
	if gr.Group == "" {
		return path.Join("resources", gr.Resource)
	}
	return path.Join("resources", gr.Resource+"."+gr.Group)
}

func scope(namespace, name string) string {
	if namespace == "" {
		return path.Join("cluster", name+".json")
	}
	return path.Join("namespaces", namespace, name+".json")
}

// ItemPath is where an item is stored at its resource's top level.
func ItemPath(gr schema.GroupResource, namespace, name string) string {
	return path.Join(resourceDir(gr), scope(namespace, name))
}

// PreferredVersionPath is where an item is stored under its version's
// directory, marked as the preferred version.
func PreferredVersionPath(gvr schema.GroupVersionResource, namespace, name string) string {
	return path.Join(resourceDir(gvr.GroupResource()), gvr.Version+"-preferredversion", scope(namespace, name))
}
