package install

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/salvor-dev/salvor/pkg/objectstore/filesystem"
)

// hostDirMount is a host directory's volume and its mount, for a pod spec.
type hostDirMount struct {
	volumes []corev1.Volume
	mounts  []corev1.VolumeMount
}

// filesystemLocations is the volume of --filesystem-location-dir and its
// mount at the same path, for the server's pod and the node agent's: a
// filesystem location (salvor.dev/filesystem) names its directory by
// path (config root), and the server, which writes its backups, and the
// node agent, which writes its pods' volume data, must each find the
// same directory there. Empty when the flag is not given.
func (o Options) filesystemLocations() (hostDirMount, error) {
	dir := o.FilesystemLocationDir
	if dir == "" {
		return hostDirMount{}, nil
	}
	if err := filesystem.CheckConfinedDir(dir); err != nil {
		return hostDirMount{}, fmt.Errorf("--filesystem-location-dir %q: %w", dir, err)
	}
	hostDir := corev1.HostPathDirectory
	return hostDirMount{
		volumes: []corev1.Volume{{Name: "filesystem-locations", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hostDir}}}},
		mounts:  []corev1.VolumeMount{{Name: "filesystem-locations", MountPath: dir}},
	}, nil
}
