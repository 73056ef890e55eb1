package controller

import (
	"fmt"
	"reflect"
	"testing"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestJSONFieldsNameEverySpecField guards what a stored spec is checked
// against: a field of Salvor's missing here would be taken for a Velero
// field Salvor ignores (or refuses).
func TestJSONFieldsNameEverySpecField(t *testing.T) {
	for _, tc := range []struct {
		typed any
		some  []string
	}{
		{salvorv1.BackupSpec{}, []string{"includedNamespaces", "storageLocation", "ttl", "snapshotVolumes", "strict"}},
		{salvorv1.RestoreSpec{}, []string{"backupName", "scheduleName", "namespaceMapping", "restorePVs", "preserveNodePorts", "restoreStatus", "resourcePolicy"}},
	} {
		typ := reflect.TypeOf(tc.typed)
		got := jsonFields(typ)
		if len(got) != typ.NumField() {
			t.Errorf("%s: %d names for %d fields: %v", typ.Name(), len(got), typ.NumField(), got)
		}
		for _, f := range tc.some {
			if !got[f] {
				t.Errorf("%s: %s missing from %v", typ.Name(), f, got)
			}
		}
	}
}

func TestJudgeUnknown(t *testing.T) {
	// Salvor's specs have every selecting field of Velero 1.18's: a field
	// Velero adds would be refused so.
	refused := map[string]string{"gadgets": "Salvor has no gadgets"}
	for _, tc := range []struct {
		name              string
		extra             map[string]any
		refused           map[string]string
		problems, ignored string
	}{
		{"nothing", nil, backupRefused, "[]", "[]"},
		{"an empty refused field", map[string]any{"gadgets": map[string]any{"list": []any{}}}, refused, "[]", "[]"},
		{"a refused field with something", map[string]any{"gadgets": map[string]any{"list": []any{map[string]any{"name": "freeze"}}}}, refused,
			"[spec.gadgets: Salvor has no gadgets]", "[]"},
		{"tuning is ignored, sorted", map[string]any{"uploaderConfig": map[string]any{}, "csiSnapshotTimeout": "10m"}, backupRefused,
			"[]", "[csiSnapshotTimeout uploaderConfig]"},
		{"a restore's uploader config ignored", map[string]any{"uploaderConfig": map[string]any{"writeSparseFiles": true}}, restoreRefused, "[]", "[uploaderConfig]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems, ignored := judgeUnknown(tc.extra, tc.refused, "spec.")
			if got := fmt.Sprint(problems); got != tc.problems {
				t.Errorf("problems %s, want %s", got, tc.problems)
			}
			if got := fmt.Sprint(ignored); got != tc.ignored {
				t.Errorf("ignored %s, want %s", got, tc.ignored)
			}
		})
	}
}

func TestEmpty(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want bool
	}{
		{nil, true},
		{map[string]any{}, true},
		{map[string]any{"resources": []any{}}, true},
		{map[string]any{"resources": []any{map[string]any{"name": "freeze"}}}, false},
		{"x", false},
		{false, false},
	} {
		if got := empty(tc.v); got != tc.want {
			t.Errorf("empty(%v) = %v", tc.v, got)
		}
	}
}
