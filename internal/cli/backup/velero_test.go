package backup

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		{[]string{"--csi-snapshot-timeout", "10m", "--default-volumes-to-fs-backup", "--parallel-files-upload", "4"},
			map[string]any{"csiSnapshotTimeout": "10m0s", "defaultVolumesToFsBackup": true,
				"uploaderConfig.parallelFilesUpload": int64(4)}, ""},
		{[]string{"--csi-snapshot-timeout", "soon"}, nil, `--csi-snapshot-timeout="soon"`},
		{[]string{"--parallel-files-upload", "many"}, nil, `--parallel-files-upload="many"`},
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

// Velero's --or-selector is the spec's orLabelSelectors: an item is backed
// up when its labels match one of them. With --selector it is refused, as
// Velero refuses both.
func TestOrSelectorFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the selectors, formatted; or the error
		err  bool
	}{
		{[]string{"--or-selector", "app=web or tier in (db,cache)"}, "app=web | tier in (cache,db)", false},
		{[]string{"--or-selector", "app=web"}, "app=web", false},
		{[]string{"--selector", "app=web", "--or-selector", "app=db or app=cache"}, "--selector and --or-selector: give one", true},
		{[]string{"--or-selector", "app=web or tier in db"}, `--or-selector "app=web or tier in db"`, true},
	} {
		o := &SpecFlags{}
		f := pflag.NewFlagSet("create", pflag.ContinueOnError)
		o.AddFlags(f)
		if err := f.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		spec, err := o.Spec()
		if tc.err {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
			}
			continue
		}
		var got []string
		for _, s := range spec.OrLabelSelectors {
			got = append(got, metav1.FormatLabelSelector(s))
		}
		if err != nil || strings.Join(got, " | ") != tc.want || spec.LabelSelector != nil {
			t.Errorf("%v: %q, %v (labelSelector %v), want %q", tc.args, got, err, spec.LabelSelector, tc.want)
		}
		if g := o.Changed(); len(g) == 0 || g[len(g)-1] != "--or-selector" {
			t.Errorf("%v: Changed() = %v, want it to name --or-selector", tc.args, g)
		}
	}
}

// Velero's per-scope resource flags are the spec's fields of those names.
func TestScopedResourceFlags(t *testing.T) {
	o := &SpecFlags{}
	f := pflag.NewFlagSet("create", pflag.ContinueOnError)
	o.AddFlags(f)
	if err := f.Parse([]string{"--include-namespace-scoped-resources", "deployments.apps,configmaps", "--exclude-namespace-scoped-resources", "secrets",
		"--include-cluster-scoped-resources", "storageclasses", "--exclude-cluster-scoped-resources", "clusterroles"}); err != nil {
		t.Fatal(err)
	}
	spec, err := o.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(spec.IncludedNamespaceScopedResources, spec.ExcludedNamespaceScopedResources, spec.IncludedClusterScopedResources, spec.ExcludedClusterScopedResources); got != "[deployments.apps configmaps] [secrets] [storageclasses] [clusterroles]" {
		t.Errorf("scoped lists %s", got)
	}
	if g := o.Changed(); len(g) != 4 {
		t.Errorf("Changed() = %v, want the four flags", g)
	}
}

// --resource-policies-configmap is Velero's flag for the spec's
// resourcePolicy, a reference to a ConfigMap, written as Velero writes it.
func TestResourcePoliciesFlag(t *testing.T) {
	o := &SpecFlags{}
	f := pflag.NewFlagSet("create", pflag.ContinueOnError)
	o.AddFlags(f)
	if err := f.Parse([]string{"--resource-policies-configmap", "skip-scratch"}); err != nil {
		t.Fatal(err)
	}
	spec, err := o.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if r := spec.ResourcePolicy; r == nil || r.Kind != "configmap" || r.Name != "skip-scratch" || r.APIGroup != nil {
		t.Fatalf("resourcePolicy %+v, want configmap skip-scratch", r)
	}
	if given := o.Changed(); fmt.Sprint(given) != "[--resource-policies-configmap]" {
		t.Fatalf("Changed() = %v: --from-schedule would not refuse it", given)
	}
	o = &SpecFlags{}
	o.AddFlags(pflag.NewFlagSet("create", pflag.ContinueOnError))
	if spec, _ := o.Spec(); spec.ResourcePolicy != nil {
		t.Fatalf("no flag, resourcePolicy %+v", spec.ResourcePolicy)
	}
}

// TestOrderedResourcesFlag: --ordered-resources is read as Velero writes
// it into spec.orderedResources; a malformed value is an error saying the
// form, before anything is made.
func TestOrderedResourcesFlag(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  map[string]string
		err   string
	}{
		{"pods=ns1/a,ns1/b;persistentvolumeclaims=ns1/c", map[string]string{"pods": "ns1/a,ns1/b", "persistentvolumeclaims": "ns1/c"}, ""},
		{" pods = ns1/a ; namespaces=ns1", map[string]string{"pods": "ns1/a", "namespaces": "ns1"}, ""},
		{"pods", nil, `--ordered-resources "pods": want RESOURCE=NAMESPACE/NAME`},
		{"pods=", nil, `--ordered-resources "pods="`},
		{"=ns/a", nil, `--ordered-resources "=ns/a"`},
		{"pods=ns/a;pods=ns/b", nil, "--ordered-resources names pods twice"},
	} {
		o := &SpecFlags{}
		f := pflag.NewFlagSet("create", pflag.ContinueOnError)
		o.AddFlags(f)
		if err := f.Parse([]string{"--ordered-resources", tc.value}); err != nil {
			t.Fatal(err)
		}
		spec, err := o.Spec()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.value, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(spec.OrderedResources, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.value, spec.OrderedResources, err, tc.want)
		}
		if given := o.Changed(); fmt.Sprint(given) != "[--ordered-resources]" {
			t.Errorf("Changed() = %v: --from-schedule would not refuse it", given)
		}
	}
}
