package backup

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DefaultVolumeGroupLabel is the claim label Velero groups volumes by when
// a backup names none (its server's --volume-group-snapshot-label-key).
const DefaultVolumeGroupLabel = "velero.io/volume-group"

// volumeGroups collects, by group, the backed-up claims that carry the
// backup's volume group label: Velero snapshots such a group at once
// (a CSI VolumeGroupSnapshot), so a database spread over several volumes
// gets write-order consistent snapshots. Salvor does not; each group is
// named in a warning rather than left to look consistent.
type volumeGroups struct {
	key    string
	groups map[string][]string // "namespace/value" → claims
}

func newVolumeGroups(key string) *volumeGroups {
	if key == "" {
		key = DefaultVolumeGroupLabel
	}
	return &volumeGroups{key: key, groups: map[string][]string{}}
}

// note records claim if it is in a group. The caller holds the run's lock.
func (g *volumeGroups) note(claim *unstructured.Unstructured) {
	if v := claim.GetLabels()[g.key]; v != "" {
		k := claim.GetNamespace() + "/" + v
		g.groups[k] = append(g.groups[k], claim.GetName())
	}
}

// warnings says, per group, that its claims were snapshotted one by one.
func (g *volumeGroups) warnings() []string {
	keys := make([]string, 0, len(g.groups))
	for k := range g.groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		ns, value, _ := strings.Cut(k, "/")
		claims := slices.Clone(g.groups[k])
		slices.Sort(claims)
		out = append(out, fmt.Sprintf("volume group %s=%s in namespace %s (claims %s): Salvor takes no VolumeGroupSnapshots, so each of its volumes is snapshotted on its own, "+
			"at a slightly different moment; an application writing across them (a database with its log on another volume) may not restore consistent — quiesce it with a pre hook",
			g.key, value, ns, strings.Join(claims, ", ")))
	}
	return out
}
