package persistence

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestVeleroMetadata: velero-backup.json is the backup under Velero's
// apiVersion, with csiSnapshotTimeout (which Velero's restore gives each
// download of moved data as its timeout) from itemOperationTimeout, or
// Velero's 10m default.
func TestVeleroMetadata(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		want    string
	}{{4 * time.Hour, "4h0m0s"}, {0, "10m0s"}} {
		b := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "salvor"}}
		b.Spec.ItemOperationTimeout.Duration = tc.timeout
		b.Spec.IncludedNamespaces = []string{"app"}
		raw, err := veleroMetadata(b)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			APIVersion string `json:"apiVersion"`
			Spec       struct {
				CSISnapshotTimeout string   `json:"csiSnapshotTimeout"`
				IncludedNamespaces []string `json:"includedNamespaces"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		if v.APIVersion != "velero.io/v1" || v.Spec.CSISnapshotTimeout != tc.want || len(v.Spec.IncludedNamespaces) != 1 {
			t.Errorf("itemOperationTimeout %v: %s", tc.timeout, raw)
		}
	}
}
