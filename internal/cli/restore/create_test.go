package restore

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestCreateFlagsMakeTheRestore: what `salvor restore create`'s flags make
// of a Restore, and the mistakes refused before any cluster is asked.
func TestCreateFlagsMakeTheRestore(t *testing.T) {
	now := time.Date(2026, 12, 4, 5, 6, 7, 0, time.UTC)
	yes := true
	for _, tc := range []struct {
		name    string
		args    []string
		restore string // the name given as the argument
		want    func(*salvorv1.Restore)
		wantErr string
	}{
		{name: "a backup, named after it and now", args: []string{"--from-backup", "nightly"},
			want: func(rs *salvorv1.Restore) { rs.Name = "nightly-20261204050607" }},
		{name: "a schedule, named by the user", args: []string{"--from-schedule", "daily"}, restore: "again",
			want: func(rs *salvorv1.Restore) { rs.Name, rs.Spec.BackupName, rs.Spec.ScheduleName = "again", "", "daily" }},
		{name: "mappings and filters", args: []string{"--from-backup", "nightly", "--include-namespaces", "shop,db", "--exclude-resources", "secrets",
			"--namespace-mappings", "shop:shop-copy,db:db-copy", "--existing-resource-policy", "update", "--strict", "--dry-run"},
			want: func(rs *salvorv1.Restore) {
				rs.Name = "nightly-20261204050607"
				rs.Spec.IncludedNamespaces, rs.Spec.ExcludedResources = []string{"shop", "db"}, []string{"secrets"}
				rs.Spec.NamespaceMapping = map[string]string{"shop": "shop-copy", "db": "db-copy"}
				rs.Spec.ExistingResourcePolicy, rs.Spec.Strict, rs.Spec.DryRun = salvorv1.ExistingResourcePolicy("update"), true, true
			}},
		{name: "optional booleans, config maps, status", args: []string{"--from-backup", "nightly", "--restore-volumes=false", "--include-cluster-resources",
			"--annotation-hooks", "--preserve-nodeports", "--trust-backup-snapshots", "--resource-modifier-configmap", "mods",
			"--resource-policies-configmap", "pols", "--status-include-resources", "*", "--status-exclude-resources", "pods", "--item-operation-timeout", "2h"},
			want: func(rs *salvorv1.Restore) {
				no := false
				rs.Name = "nightly-20261204050607"
				rs.Spec.RestorePVs, rs.Spec.IncludeClusterResources, rs.Spec.AnnotationHooks, rs.Spec.PreserveNodePorts = &no, &yes, &yes, &yes
				rs.Spec.TrustBackupSnapshots = true
				rs.Spec.ResourceModifier = &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "mods"}
				rs.Spec.ResourcePolicy = &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "pols"}
				rs.Spec.RestoreStatus = &salvorv1.RestoreStatusSpec{IncludedResources: []string{"*"}, ExcludedResources: []string{"pods"}}
				rs.Spec.ItemOperationTimeout = metav1.Duration{Duration: 2 * time.Hour}
			}},
		{name: "labels and annotations", args: []string{"--from-backup", "nightly", "--labels", "team=a", "--annotations", "why=drill"},
			want: func(rs *salvorv1.Restore) {
				rs.Name, rs.Labels, rs.Annotations = "nightly-20261204050607", map[string]string{"team": "a"}, map[string]string{"why": "drill"}
			}},
		{name: "nothing to restore", args: nil, wantErr: "say what to restore: --from-backup BACKUP"},
		{name: "both a backup and a schedule", args: []string{"--from-backup", "a", "--from-schedule", "b"}, wantErr: "not both"},
		{name: "partially failed without a schedule", args: []string{"--from-backup", "a", "--allow-partially-failed"}, wantErr: "--allow-partially-failed is for --from-schedule"},
		{name: "status excluded from nothing", args: []string{"--from-backup", "a", "--status-exclude-resources", "pods"}, wantErr: "--status-include-resources, which is not given"},
		{name: "a mapping without its target", args: []string{"--from-backup", "a", "--namespace-mappings", "shop:"}, wantErr: `--namespace-mappings "shop:": want from:to`},
		{name: "a mapping without a colon", args: []string{"--from-backup", "a", "--namespace-mappings", "shop"}, wantErr: "want from:to"},
		{name: "not a boolean", args: []string{"--from-backup", "a", "--restore-volumes=maybe"}, wantErr: "restore-volumes"},
		{name: "both selectors", args: []string{"--from-backup", "a", "--selector", "app=web", "--or-selector", "app=db"}, wantErr: "selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &createOptions{}
			f := pflag.NewFlagSet("create", pflag.ContinueOnError)
			o.bind(f)
			if err := f.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := o.restore("salvor", tc.restore, now)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "nightly"}}
			tc.want(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("restore\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}
