package restore

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/salvor-dev/salvor/internal/resourcepolicy"
	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestSelectScripts runs the scripts in testdata/select: which items of a
// backup a restore takes and where, decided by the selection alone (no
// cluster but the one whose discovery answers, so names in a spec resolve
// as a real API server serves them). Directives:
//
//	restore     the restore's spec as JSON; the directives after it judge by it
//	policy      the filter policies (YAML of a resource policy ConfigMap) for
//	            the restore before it, or none with an empty input
//	judge       resource=RESOURCE.GROUP [ns=NS] name=NAME: what the restore
//	            makes of the item whose JSON is the input (empty: one with
//	            no labels)
//	needed      resource=RESOURCE.GROUP [ns=NS] name=NAME: whether an item
//	            a restored one or a plugin asks for passes the filters
//
// go test -run TestSelectScripts -rewrite writes the outputs the code gives.
func TestSelectScripts(t *testing.T) {
	served, _, err := resources.Discover(discovery.NewDiscoveryClientForConfigOrDie(testbed.SharedControlPlane(t)))
	if err != nil {
		t.Fatal(err)
	}
	datadriven.Walk(t, "testdata/select", func(t *testing.T, path string) {
		var spec *salvorv1.RestoreSpec
		var sel *selection
		// judgeBy makes the directives after it judge by spec and policies.
		judgeBy := func(policies *resourcepolicy.Filters) string {
			s, err := newSelection(spec, policies)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			sel = s.withServed(served)
			return "ok\n"
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "restore":
				spec = &salvorv1.RestoreSpec{}
				if err := json.Unmarshal([]byte(d.Input), spec); err != nil {
					d.Fatalf(t, "the spec: %v", err)
				}
				return judgeBy(nil)
			case "policy":
				if spec == nil {
					d.Fatalf(t, "policy before restore")
				}
				var filters *resourcepolicy.Filters
				if strings.TrimSpace(d.Input) != "" {
					p, problems := resourcepolicy.Parse("policies salvor/p", d.Input)
					if len(problems) > 0 {
						return "problems: " + strings.Join(problems, "; ") + "\n"
					}
					filters = p.Filters()
				}
				return judgeBy(filters)
			case "judge", "needed":
				if sel == nil {
					d.Fatalf(t, "%s before restore", d.Cmd)
				}
				var resource, ns, name string
				d.ScanArgs(t, "resource", &resource)
				d.ScanArgs(t, "name", &name)
				if d.HasArg("ns") {
					d.ScanArgs(t, "ns", &ns)
				}
				gr := schema.ParseGroupResource(resource)
				if d.Cmd == "needed" {
					if sel.additionalAllowed(gr, ns, name) {
						return "allowed\n"
					}
					return "refused\n"
				}
				obj := &unstructured.Unstructured{Object: map[string]any{}}
				if strings.TrimSpace(d.Input) != "" {
					if err := json.Unmarshal([]byte(d.Input), &obj.Object); err != nil {
						d.Fatalf(t, "the item: %v", err)
					}
				}
				return verdictText(sel, gr, ns, name, sel.judge(gr, ns, name, obj))
			default:
				d.Fatalf(t, "unknown directive %s: want restore, policy, judge or needed", d.Cmd)
				return ""
			}
		})
	})
}

// verdictText is a verdict as a script's output.
func verdictText(sel *selection, gr schema.GroupResource, ns, name string, v verdict) string {
	switch {
	case v.take && gr == namespaceResource:
		return "restored as namespace " + sel.targetNamespace(name) + "\n"
	case v.take && ns == "":
		return "restored\n"
	case v.take:
		return "restored into " + sel.targetNamespace(ns) + "\n"
	case v.candidate:
		return "left out, unless a restored item needs it\n"
	case v.warning != "":
		return fmt.Sprintf("skipped: %s\nwarning: %s\n", v.skipped, v.warning)
	}
	return "left out\n"
}
