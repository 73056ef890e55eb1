package backup

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func TestVolumeProgress(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	later := metav1.NewTime(start.Add(10 * time.Second))
	half := salvorv1.VolumeOperationProgress{TotalBytes: 200 << 20, BytesDone: 100 << 20}
	for _, tc := range []struct {
		phase            string
		p                salvorv1.VolumeOperationProgress
		started, updated *metav1.Time
		want             []string
	}{
		{"InProgress", half, &start, &later, []string{"InProgress", "104857600 / 209715200 bytes (50%)", "10.0 MiB/s", "10s"}},
		// Ended copies promise no end: their last figures are history.
		{"Canceled", half, &start, &later, []string{"Canceled", "104857600 / 209715200 bytes (50%)", "10.0 MiB/s", "-"}},
		{"Failed", half, &start, &later, []string{"Failed", "104857600 / 209715200 bytes (50%)", "10.0 MiB/s", "-"}},
		{"InProgress", salvorv1.VolumeOperationProgress{TotalBytes: 10}, &start, nil, []string{"InProgress", "0 / 10 bytes (50%)", "-", "-"}},
	} {
		st := salvorv1.VolumePluginStatus{Phase: tc.phase, Progress: tc.p, Percent: 50, StartTimestamp: tc.started, Updated: tc.updated}
		if got := VolumeProgress(st); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %+v: %q, want %q", tc.phase, tc.p, got, tc.want)
		}
	}
}

// TestResourceList: describe --details lists a backup's items by
// apiVersion and kind, sorted, as Velero's does.
func TestResourceList(t *testing.T) {
	var b strings.Builder
	resourceList(&b, map[string][]string{"v1/Namespace": {"app"}, "apps/v1/Deployment": {"app/web", "app/db"}, "v1/ConfigMap": {"app/cfg"}})
	want := `Resource list:
  apps/v1/Deployment:
    - app/web
    - app/db
  v1/ConfigMap:
    - app/cfg
  v1/Namespace:
    - app
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	resourceList(&b, nil)
	if b.String() != "Resource list: none\n" {
		t.Errorf("an empty list: %q", b.String())
	}
}
