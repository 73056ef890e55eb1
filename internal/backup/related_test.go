package backup

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestBindingsBySubject(t *testing.T) {
	var items []unstructured.Unstructured
	for _, doc := range []string{
		`{"metadata":{"name":"operator"},"roleRef":{"kind":"ClusterRole","name":"operator-role"},
		  "subjects":[{"kind":"ServiceAccount","namespace":"app","name":"op"},{"kind":"Group","name":"devs"},{"kind":"ServiceAccount","namespace":"app","name":"op"}]}`,
		`{"metadata":{"name":"app-view"},"roleRef":{"kind":"ClusterRole","name":"view"},"subjects":[{"kind":"ServiceAccount","namespace":"app","name":"op"},{"kind":"ServiceAccount","namespace":"other","name":"web"}]}`,
		`{"metadata":{"name":"users"},"roleRef":{"kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"User","name":"ann"}]}`,
		`{"metadata":{"name":"no-namespace"},"roleRef":{"kind":"ClusterRole","name":"x"},"subjects":[{"kind":"ServiceAccount","name":"op"}]}`,
		`{"metadata":{"name":"malformed"},"subjects":"nope"}`,
	} {
		u := unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		items = append(items, u)
	}
	got := bindingsBySubject(items)
	for key, want := range map[string]string{
		"app/op":    "[{app-view view} {operator operator-role}]",
		"other/web": "[{app-view view}]",
		"/op":       "[]",
	} {
		if s := fmt.Sprint(got[key]); s != want {
			t.Errorf("%s: %s, want %s", key, s, want)
		}
	}
	if len(got) != 2 {
		t.Errorf("subjects %v: users, groups and accounts without a namespace are not service accounts of a namespace", got)
	}
}

// TestFSBackupWarning: the warning for Velero's file-backup annotation
// names only the volumes whose files are left out, never a claim (its
// snapshot or moved data is its own outcome), and the names the pod does
// not have.
func TestFSBackupWarning(t *testing.T) {
	spec := `{"volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"pg"}},{"name":"cache","emptyDir":{}},{"name":"conf","configMap":{"name":"c"}}]}`
	for _, tc := range []struct{ annotation, want string }{
		{"", ""},
		{"data", ""},
		{" data ,", ""},
		{"data,cache", "the files of volumes cache (emptyDir) are not in the backup: backup.velero.io/backup-volumes asks Velero to copy them, and Salvor copies no files of volumes without a claim"},
		{"cache,conf,gone", "the files of volumes cache (emptyDir), conf (configMap) are not in the backup: backup.velero.io/backup-volumes asks Velero to copy them, and Salvor copies no files of volumes without a claim; backup.velero.io/backup-volumes names volumes gone, which the pod does not have"},
	} {
		pod := &unstructured.Unstructured{Object: map[string]any{}}
		if err := json.Unmarshal([]byte(`{"spec":`+spec+`}`), &pod.Object); err != nil {
			t.Fatal(err)
		}
		if tc.annotation != "" {
			pod.SetAnnotations(map[string]string{"backup.velero.io/backup-volumes": tc.annotation})
		}
		if got := fsBackupWarning(pod); got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.annotation, got, tc.want)
		}
	}
}
