package podvolume

import (
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Dir is where a node keeps a pod's volume, relative to the kubelet's
// pods directory (/var/lib/kubelet/pods): UID/volumes/PLUGIN/NAME, NAME
// being the persistent volume's name for a claim and the pod volume's
// otherwise, with /mount after it for CSI volumes. pv is the claim's
// bound volume (nil for a volume that is not a claim). The plugin
// directory is a pattern ("*") unless known, since in-tree plugins each
// have their own; the caller matches it on the node and requires one
// match.
func Dir(uid types.UID, v *corev1.Volume, pv *corev1.PersistentVolume) (string, error) {
	if err := checkUID(uid); err != nil {
		return "", err
	}
	name, plugin, csi := v.Name, "*", v.CSI != nil
	switch {
	case v.PersistentVolumeClaim != nil:
		if pv == nil {
			return "", fmt.Errorf("volume %s: claim %s has no bound persistent volume", v.Name, v.PersistentVolumeClaim.ClaimName)
		}
		name, csi = pv.Name, pv.Spec.CSI != nil
	case v.EmptyDir != nil:
		plugin = "kubernetes.io~empty-dir"
	}
	if csi {
		plugin = "kubernetes.io~csi"
	}
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return "", fmt.Errorf("volume %s: %q cannot be a directory name", v.Name, name)
	}
	d := filepath.Join(string(uid), "volumes", plugin, name)
	if csi {
		d = filepath.Join(d, "mount")
	}
	return d, nil
}

// checkUID refuses a UID that is not one directory name: it becomes part
// of a path on the node.
func checkUID(uid types.UID) error {
	s := string(uid)
	if s == "" || s == "." || s == ".." || filepath.Base(s) != s || len(s) > 64 {
		return fmt.Errorf("pod UID %q cannot be a directory name", s)
	}
	return nil
}
