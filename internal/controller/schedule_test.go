package controller

import (
	"reflect"
	"testing"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestBackupSpecFieldsAreAllKnown guards the list the schedule's template
// is checked against: a BackupSpec field missing from it would be taken
// for a Velero field Salvor ignores.
func TestBackupSpecFieldsAreAllKnown(t *testing.T) {
	if n := reflect.TypeOf(salvorv1.BackupSpec{}).NumField(); len(backupSpecFields) != n {
		t.Fatalf("backupSpecFields has %d names, BackupSpec %d fields: set the new field in backupSpecFields' spec", len(backupSpecFields), n)
	}
	for _, f := range []string{"includedNamespaces", "storageLocation", "ttl", "snapshotVolumes"} {
		if !backupSpecFields[f] {
			t.Errorf("%s missing", f)
		}
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
	} {
		if got := empty(tc.v); got != tc.want {
			t.Errorf("empty(%v) = %v", tc.v, got)
		}
	}
}
