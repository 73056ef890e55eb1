package configmapref

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRead(t *testing.T) {
	f := Field{Path: "spec.resourcePolicy", Holds: "resource policies", Source: "resource policies configmap", Owner: "backup", File: "policies.yaml"}
	get := func(_ context.Context, ns, name string) (map[string]string, error) {
		switch {
		case ns == "salvor" && name == "one":
			return map[string]string{"p.yaml": "version: v1"}, nil
		case ns == "salvor" && name == "two":
			return map[string]string{"a": "", "b": ""}, nil
		case name == "down":
			return nil, errors.New("connection refused")
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	group := "apps"
	for _, tc := range []struct {
		name    string
		ref     *corev1.TypedLocalObjectReference
		text    string // the document's; "" none
		problem string // in the problems; "" none
		err     string
	}{
		{"none", nil, "", "", ""},
		{"Velero's kind", &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "one"}, "version: v1", "", ""},
		{"kubectl's kind", &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: "one"}, "version: v1", "", ""},
		{"another kind", &corev1.TypedLocalObjectReference{Kind: "Secret", Name: "one"}, "", `spec.resourcePolicy: kind "Secret": resource policies are kept in a ConfigMap (kind: configmap)`, ""},
		{"another group", &corev1.TypedLocalObjectReference{APIGroup: &group, Kind: "configmap", Name: "one"}, "", "kept in a ConfigMap", ""},
		{"no name", &corev1.TypedLocalObjectReference{Kind: "configmap"}, "", "spec.resourcePolicy.name is required: the ConfigMap holding the resource policies", ""},
		{"missing", &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "gone"}, "",
			"spec.resourcePolicy: resource policies configmap salvor/gone does not exist: create it in the backup's namespace (kubectl create configmap gone -n salvor --from-file policies.yaml)", ""},
		{"two keys", &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "two"}, "",
			"resource policies configmap salvor/two has 2 data keys: resource policies are one YAML document under one key", ""},
		{"unreadable", &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "down"}, "", "", "reading resource policies configmap salvor/down: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, problems, err := Read(context.Background(), get, "salvor", f, tc.ref)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(problems, "\n")
			if tc.problem == "" && got != "" || !strings.Contains(got, tc.problem) {
				t.Fatalf("problems %q, want %q", got, tc.problem)
			}
			if tc.text == "" {
				if doc != nil {
					t.Fatalf("read %+v, want nothing", doc)
				}
				return
			}
			if doc == nil || doc.Text != tc.text || doc.Source != "resource policies configmap salvor/"+tc.ref.Name {
				t.Fatalf("read %+v, want %q", doc, tc.text)
			}
		})
	}
}
