package restore

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestItems runs the scripts in testdata/items: what a restore makes of
// each backed-up item, decided without a cluster. Each directive names
// the resource (resource=RESOURCE.GROUP) and gives the item's JSON:
//
//	left-out   why the item is not restored, or "restored"
//	adjust     the item as Adjust leaves it (map=FROM:TO[,FROM:TO] maps namespaces)
//	inert      what a test restore changed, and the item after (or "dropped")
//	clean      the item as Clean leaves it (backup=NAME restore=NAME
//	           [preserve-node-ports])
//
// go test -run TestItems -rewrite writes the outputs the code gives.
func TestItems(t *testing.T) {
	datadriven.Walk(t, "testdata/items", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var gr schema.GroupResource
			if d.HasArg("resource") {
				var resource string
				d.ScanArgs(t, "resource", &resource)
				gr = schema.ParseGroupResource(resource)
			}
			obj := &unstructured.Unstructured{}
			if err := json.Unmarshal([]byte(d.Input), &obj.Object); err != nil {
				d.Fatalf(t, "the item: %v", err)
			}
			switch d.Cmd {
			case "left-out":
				if why := leftOut(gr, obj); why != "" {
					return "left out: " + why + "\n"
				}
				return "restored\n"
			case "adjust":
				mapping := map[string]string{}
				if d.HasArg("map") {
					var pair string
					d.ScanArgs(t, "map", &pair)
					for _, p := range strings.Split(pair, ",") {
						from, to, ok := strings.Cut(p, ":")
						if !ok {
							d.Fatalf(t, "map=%s: want FROM:TO", p)
						}
						mapping[from] = to
					}
				}
				Adjust(gr, obj, func(ns string) string {
					if to, ok := mapping[ns]; ok {
						return to
					}
					return ns
				})
				return indented(t, d, obj)
			case "inert":
				changed, drop := Inert(gr, obj)
				var out strings.Builder
				for _, c := range changed {
					out.WriteString("changed: " + c + "\n")
				}
				if drop {
					return out.String() + "dropped\n"
				}
				return out.String() + indented(t, d, obj)
			case "clean":
				var backup, restore string
				d.ScanArgs(t, "backup", &backup)
				d.ScanArgs(t, "restore", &restore)
				Clean(obj, backup, restore, d.HasArg("preserve-node-ports"))
				return indented(t, d, obj)
			default:
				d.Fatalf(t, "unknown directive %s: want left-out, adjust, inert or clean", d.Cmd)
				return ""
			}
		})
	})
}

// indented is obj's JSON as a script's output.
func indented(t *testing.T, d *datadriven.TestData, obj *unstructured.Unstructured) string {
	out, err := json.MarshalIndent(obj.Object, "", "  ")
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	return string(out) + "\n"
}
