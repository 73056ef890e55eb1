package selfservice

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestMirrorNames: a tenant object's copy is named namespace.name, one no
// other tenant object can have; a name too long for it is refused; a copy
// follows only the very object it was made for.
func TestMirrorNames(t *testing.T) {
	for _, tc := range []struct {
		ns, name, want, wantErr string
	}{
		{"team-a", "nightly", "team-a.nightly", ""},
		{"team-a", "nightly.v2", "team-a.nightly.v2", ""},
		{"team-a", strings.Repeat("x", 250), "", "choose a shorter name"},
	} {
		got, err := mirrorName(tc.ns, tc.name)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s/%s: %q, %v; want an error saying %q", tc.ns, tc.name, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s/%s: %q, %v; want %q", tc.ns, tc.name, got, err, tc.want)
		}
	}

	tenant := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "nightly", UID: "u-1"}}
	mirror := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "team-a.nightly", Labels: mirrorLabels(tenant)}}
	if !mirrors(mirror, tenant) {
		t.Error("a copy does not follow the object it was made for")
	}
	if key, ok := tenantOf(mirror); !ok || key != (client.ObjectKey{Namespace: "team-a", Name: "nightly"}) {
		t.Errorf("the copy's tenant object: %v %v", key, ok)
	}
	again := tenant.DeepCopy()
	again.UID = "u-2"
	if mirrors(mirror, again) {
		t.Error("a copy made for an earlier object of the same name follows a new one")
	}
	if _, ok := tenantOf(&salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "everything"}}); ok {
		t.Error("the platform team's own backup taken for a tenant's copy")
	}
}
