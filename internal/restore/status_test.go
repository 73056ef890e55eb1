package restore

import (
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/persistence"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Which items get their status back: the item's annotation over the
// restore's lists, the lists as includedResources reads names, nothing
// without either.
func TestStatusToRestore(t *testing.T) {
	deploy := schema.GroupResource{Group: "apps", Resource: "deployments"}
	svc := schema.GroupResource{Resource: "services"}
	status := map[string]any{"replicas": int64(3)}
	for _, tc := range []struct {
		name       string
		spec       *salvorv1.RestoreStatusSpec
		gr         schema.GroupResource
		annotation string // "-" for none
		status     any    // nil for none
		want       bool
		warning    string
	}{
		{"no restoreStatus", nil, deploy, "-", status, false, ""},
		{"included by resource", &salvorv1.RestoreStatusSpec{IncludedResources: []string{"deployments"}}, deploy, "-", status, true, ""},
		{"included by group resource", &salvorv1.RestoreStatusSpec{IncludedResources: []string{"deployments.apps"}}, deploy, "-", status, true, ""},
		{"included by kind", &salvorv1.RestoreStatusSpec{IncludedResources: []string{"Deployment"}}, deploy, "-", status, true, ""},
		{"another resource included", &salvorv1.RestoreStatusSpec{IncludedResources: []string{"services"}}, deploy, "-", status, false, ""},
		{"empty lists: all", &salvorv1.RestoreStatusSpec{}, svc, "-", status, true, ""},
		{"star", &salvorv1.RestoreStatusSpec{IncludedResources: []string{"*"}}, svc, "-", status, true, ""},
		{"excluded wins", &salvorv1.RestoreStatusSpec{IncludedResources: []string{"*"}, ExcludedResources: []string{"services"}}, svc, "-", status, false, ""},
		{"annotation true without restoreStatus", nil, deploy, "true", status, true, ""},
		{"annotation TRUE, spaced", nil, deploy, " TRUE ", status, true, ""},
		{"annotation true over an exclusion", &salvorv1.RestoreStatusSpec{ExcludedResources: []string{"deployments"}}, deploy, "true", status, true, ""},
		{"annotation false over an inclusion", &salvorv1.RestoreStatusSpec{IncludedResources: []string{"deployments"}}, deploy, "false", status, false, ""},
		{"annotation neither: the lists decide, yes", &salvorv1.RestoreStatusSpec{}, deploy, "yes", status, true,
			`deployments.apps app/web: annotation velero.io/restore-status is "yes", neither true nor false; the restore's restoreStatus decides (status restored: true)`},
		{"annotation neither: the lists decide, no", nil, deploy, "1", status, false, "(status restored: false)"},
		{"no status in the backup", &salvorv1.RestoreStatusSpec{}, deploy, "-", nil, false, ""},
		{"empty status", &salvorv1.RestoreStatusSpec{}, deploy, "-", map[string]any{}, false, ""},
		{"status not an object", &salvorv1.RestoreStatusSpec{}, deploy, "-", "Ready", false, "its status in the backup is a string, not an object; restored without it"},
		{"status not an object, not asked for", nil, deploy, "-", "Ready", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{restore: &salvorv1.Restore{Spec: salvorv1.RestoreSpec{RestoreStatus: tc.spec}},
				rec: persistence.Recorder{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
			sel, err := newSelection(&r.restore.Spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			r.sel.Store(sel)
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service"}}
			if tc.gr == deploy {
				obj.SetAPIVersion("apps/v1")
				obj.SetKind("Deployment")
			}
			if tc.annotation != "-" {
				obj.SetAnnotations(map[string]string{salvorv1.VeleroRestoreStatusAnnotation: tc.annotation})
			}
			got := r.statusToRestore(tc.gr, obj, tc.status, describe(tc.gr, "app", "web"), "app")
			if tc.want != (got != nil) || tc.want && !reflect.DeepEqual(got, status) {
				t.Errorf("status to restore: %v, want it: %t", got, tc.want)
			}
			results := r.rec.Results()
			warnings := results.Warnings.All()
			switch {
			case tc.warning == "" && len(warnings) > 0:
				t.Errorf("warnings %q", warnings)
			case tc.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.warning)):
				t.Errorf("warnings %q, want one with %q", warnings, tc.warning)
			}
		})
	}
}
