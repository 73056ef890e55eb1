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

// TestFSBackupWarnings: a warning for each volume chosen for file-system
// backup that cannot be copied, and none for those that can (a claim's or
// an emptyDir's, copied by the pod volume action).
func TestFSBackupWarnings(t *testing.T) {
	spec := `{"volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"pg"}},{"name":"cache","emptyDir":{}},{"name":"logs","hostPath":{"path":"/var/log"}}],` +
		`"containers":[{"name":"c","volumeMounts":[{"name":"data","mountPath":"/d"},{"name":"cache","mountPath":"/c"},{"name":"logs","mountPath":"/l"}]}]}`
	for _, tc := range []struct {
		annotation string
		defaultFS  bool
		want       string
	}{
		{"", false, "[]"},
		{"", true, "[]"},
		{" data ,cache", false, "[]"},
		{"logs,gone", false, "[the files of volume logs are not in the backup: volume logs of pod app/web is a hostPath volume, which is not under the kubelet's pod directories where the node agent reads " +
			"the files of volume gone are not in the backup: pod app/web has no volume gone (named by backup.velero.io/backup-volumes)]"},
	} {
		pod := &unstructured.Unstructured{Object: map[string]any{}}
		if err := json.Unmarshal([]byte(`{"metadata":{"namespace":"app","name":"web"},"spec":`+spec+`,"status":{"phase":"Running"}}`), &pod.Object); err != nil {
			t.Fatal(err)
		}
		if tc.annotation != "" {
			pod.SetAnnotations(map[string]string{"backup.velero.io/backup-volumes": tc.annotation})
		}
		if got := fmt.Sprint(fsBackupWarnings(pod, tc.defaultFS)); got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.annotation, got, tc.want)
		}
	}
}
