package backup

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestVeleroFields: Velero's flags for fields Salvor's spec has not become
// those fields as Velero writes them; a value Velero would refuse is an
// error naming the flag; flags not given set nothing.
func TestVeleroFields(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want map[string]any
		err  string
	}{
		{nil, map[string]any{}, ""},
		{[]string{"--csi-snapshot-timeout", "10m", "--default-volumes-to-fs-backup", "--snapshot-move-data=false", "--parallel-files-upload", "4", "--data-mover", "velero"},
			map[string]any{"csiSnapshotTimeout": "10m0s", "defaultVolumesToFsBackup": true, "snapshotMoveData": false,
				"uploaderConfig.parallelFilesUpload": int64(4), "datamover": "velero"}, ""},
		{[]string{"--or-selector", "app=web or tier in (db,cache)"},
			map[string]any{"orLabelSelectors": []any{
				map[string]any{"matchLabels": map[string]any{"app": "web"}},
				map[string]any{"matchExpressions": []any{map[string]any{"key": "tier", "operator": "In", "values": []any{"cache", "db"}}}},
			}}, ""},
		{[]string{"--ordered-resources", "pods=ns1/a,ns1/b;persistentvolumeclaims=ns1/c"},
			map[string]any{"orderedResources": map[string]any{"pods": "ns1/a,ns1/b", "persistentvolumeclaims": "ns1/c"}}, ""},
		{[]string{"--include-cluster-scoped-resources", "storageclasses, clusterroles", "--resource-policies-configmap", "policy"},
			map[string]any{"includedClusterScopedResources": []any{"storageclasses", "clusterroles"},
				"resourcePolicy": map[string]any{"kind": "configmap", "name": "policy"}}, ""},
		{[]string{"--csi-snapshot-timeout", "soon"}, nil, `--csi-snapshot-timeout="soon"`},
		{[]string{"--parallel-files-upload", "many"}, nil, `--parallel-files-upload="many"`},
		{[]string{"--ordered-resources", "pods"}, nil, "want RESOURCE=NS/NAME"},
	} {
		o := &SpecFlags{}
		f := pflag.NewFlagSet("create", pflag.ContinueOnError)
		o.AddFlags(f)
		if err := f.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		got, err := o.VeleroFields()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v:\n got %#v (%v)\nwant %#v", tc.args, got, err, tc.want)
		}
		if given := o.Changed(); len(given) != len(tc.want) {
			t.Errorf("%v: Changed() = %v: --from-schedule would not refuse them", tc.args, given)
		}
	}
}
