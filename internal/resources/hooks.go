package resources

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Velero runs commands in a restored pod's containers when the pod is
// annotated so. Salvor runs no such commands after a restore (it runs
// backup hooks, internal/hooks, and puts init hook containers into
// restored pods, internal/restore), and a pod asking for one must not
// look restored as asked: the restore says so, per pod, in a warning.
//
// RestoreHooks are the annotations that ask Velero to run a command in a
// restored pod.
var RestoreHooks = []string{"post.hook.restore.velero.io/command"}

// FSBackupVolumes is the annotation by which a pod asks Velero to copy
// the named volumes' files (restic or kopia), a comma-separated list.
// Salvor copies no files: a claim's volume is in a backup only as its
// snapshot, and an emptyDir not at all.
const FSBackupVolumes = "backup.velero.io/backup-volumes"

// HooksAsked describes the hooks of keys a pod's annotations ask for, or
// is "" if it asks for none.
func HooksAsked(pod *unstructured.Unstructured, keys []string) string {
	annotations := pod.GetAnnotations()
	var asked string
	for _, k := range keys {
		if v := annotations[k]; v != "" {
			if asked != "" {
				asked += ", "
			}
			asked += fmt.Sprintf("%s: %s", k, v)
		}
	}
	return asked
}
