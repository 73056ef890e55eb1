package backup

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestVolumeGroups: claims sharing a value of the group label are named
// together, per namespace, under the backup's key (Velero's by default);
// claims without it are not groups.
func TestVolumeGroups(t *testing.T) {
	claim := func(ns, name string, labels map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetLabels(labels)
		return u
	}
	g := newVolumeGroups("")
	for _, c := range []*unstructured.Unstructured{
		claim("shop", "wal", map[string]string{"velero.io/volume-group": "pg"}),
		claim("shop", "data", map[string]string{"velero.io/volume-group": "pg"}),
		claim("shop", "cache", nil),
		claim("other", "data", map[string]string{"velero.io/volume-group": "pg"}),
		claim("shop", "x", map[string]string{"example.io/group": "pg"}),
	} {
		g.note(c)
	}
	got := g.warnings()
	want := []string{
		"volume group velero.io/volume-group=pg in namespace other (claims data): Salvor takes no VolumeGroupSnapshots, so each of its volumes is snapshotted on its own, at a slightly different moment; an application writing across them (a database with its log on another volume) may not restore consistent — quiesce it with a pre hook",
		"volume group velero.io/volume-group=pg in namespace shop (claims data, wal): Salvor takes no VolumeGroupSnapshots, so each of its volumes is snapshotted on its own, at a slightly different moment; an application writing across them (a database with its log on another volume) may not restore consistent — quiesce it with a pre hook",
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("warnings:\n%q\nwant\n%q", got, want)
	}
	own := newVolumeGroups("example.io/group")
	own.note(claim("shop", "x", map[string]string{"example.io/group": "pg"}))
	own.note(claim("shop", "wal", map[string]string{"velero.io/volume-group": "pg"}))
	if w := own.warnings(); len(w) != 1 || w[0][:40] != "volume group example.io/group=pg in name" {
		t.Errorf("with the backup's own key: %q", w)
	}
}
