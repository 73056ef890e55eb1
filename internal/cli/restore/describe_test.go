package restore

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestDescribeSaysWhatTheRestoreHolds: the summary `restore describe`
// prints before any detail is fetched, for a restore that ran and for a
// dry run; namespace mappings in a stable order.
func TestDescribeSaysWhatTheRestoreHolds(t *testing.T) {
	for _, tc := range []struct {
		name string
		rs   salvorv1.Restore
		want []string
		not  []string
	}{
		{
			name: "ran",
			rs: salvorv1.Restore{
				ObjectMeta: metav1.ObjectMeta{Name: "r1"},
				Spec: salvorv1.RestoreSpec{BackupName: "nightly", ScheduleName: "daily", IncludedNamespaces: []string{"app", "db"},
					NamespaceMapping:       map[string]string{"db": "db-copy", "app": "app-copy"},
					ExistingResourcePolicy: "update",
					ResourceModifier:       &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: "rules"}},
				Status: salvorv1.RestoreStatus{Phase: salvorv1.RestorePhasePartiallyFailed, Errors: 1, Warnings: 2,
					Progress:                       &salvorv1.RestoreProgress{TotalItems: 10, ItemsRestored: 10},
					Outcomes:                       &salvorv1.RestoreOutcomes{Created: 8, Skipped: 1, Failed: 1},
					RestoreItemOperationsAttempted: 3, RestoreItemOperationsCompleted: 1, RestoreItemOperationsFailed: 1},
			},
			want: []string{
				"Name:         r1\nBackup:       nightly\nSchedule:     daily\nPhase:        PartiallyFailed\n",
				"Namespaces:   app, db (excluded: <none>)\nMappings:     app → app-copy, db → db-copy\nExisting resources: update\n",
				"Modifiers:    configmap rules\n",
				"Items:        10 of 10 items: 8 created, 0 updated, 1 skipped, 1 failed\nErrors:       1\nWarnings:     2\n",
				"Item operations: 1 of 3 completed, 1 failed, 1 in progress\n",
			},
			not: []string{"Dry run", "Failure:", "Hooks:"},
		},
		{
			name: "dry run",
			rs: salvorv1.Restore{
				ObjectMeta: metav1.ObjectMeta{Name: "check"},
				Spec:       salvorv1.RestoreSpec{BackupName: "nightly", DryRun: true},
				Status: salvorv1.RestoreStatus{Phase: salvorv1.RestorePhaseCompleted, Progress: &salvorv1.RestoreProgress{TotalItems: 5, ItemsRestored: 5},
					DryRun: &salvorv1.DryRunSummary{WouldCreate: 2, Identical: 3}},
			},
			want: []string{
				"Namespaces:   * (excluded: <none>)\nMappings:     <none>\nExisting resources: none\n",
				"Dry run:      nothing was written\nItems:        5 of 5 checked\n",
				"Would:        create 2, leave 3 identical, find 0 differing, skip 0, fail 0\n",
			},
			not: []string{"Schedule:", "Item operations"},
		},
		{
			name: "failed",
			rs: salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r2"}, Spec: salvorv1.RestoreSpec{BackupName: "gone"},
				Status: salvorv1.RestoreStatus{Phase: salvorv1.RestorePhaseFailed, FailureReason: "backup gone is not in any location"}},
			want: []string{"Phase:        Failed\nFailure:      backup gone is not in any location\n", "Items:        0 of 0 items done\n"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			describe(&b, &tc.rs)
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("lacks %q:\n%s", w, b.String())
				}
			}
			for _, n := range tc.not {
				if strings.Contains(b.String(), n) {
					t.Errorf("has %q:\n%s", n, b.String())
				}
			}
		})
	}
}
