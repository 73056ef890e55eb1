package backup

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestOrderProblems: entries are checked against their resource's scope,
// as a real API server serves resources, whatever name the key uses.
func TestOrderProblems(t *testing.T) {
	served, _ := discovered(t)
	for _, tc := range []struct {
		name string
		spec map[string]string
		want string // "" for none
	}{
		{"namespaced", map[string]string{"pods": "db/db-0, db/db-1", "persistentvolumeclaims": "db/data-db-0"}, ""},
		{"other names for resources", map[string]string{"deploy": "web/a", "Deployment.apps": "web/b", "ns": "web,db"}, ""},
		{"cluster-scoped", map[string]string{"storageclasses.storage.k8s.io": "fast,slow"}, ""},
		{"trailing comma", map[string]string{"pods": "db/db-0,"}, ""},
		{"no namespace", map[string]string{"pods": "db-0"}, `orderedResources pods: "db-0" names no namespace, and pods are namespaced: write namespace/db-0`},
		{"a namespace too many", map[string]string{"ns": "db/web"}, `orderedResources ns: "db/web" names a namespace, and namespaces are cluster-scoped: write web`},
		{"two slashes", map[string]string{"pods": "db/a/b"}, `orderedResources pods: "db/a/b" is not namespace/name`},
		{"empty namespace", map[string]string{"pods": "/a"}, `orderedResources pods: "/a" is not namespace/name`},
		{"twice", map[string]string{"pods": "db/a,db/b,db/a"}, "orderedResources pods: db/a is named twice"},
		{"every resource", map[string]string{"*": "db/a"}, `orderedResources: "*" (with items "db/a") names no one resource`},
		// For resources.Unknown to report: nothing to check the entries against.
		{"unknown resource", map[string]string{"gizmos": "a"}, ""},
	} {
		got := strings.Join(OrderProblems(tc.spec, served), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestNewOrder: the named items of each resource, resolved by any of its
// names, in the order given; resources in the order discovery gives them.
func TestNewOrder(t *testing.T) {
	served, _ := discovered(t)
	o := newOrder(map[string]string{"cm": "a/x, a/y", "namespaces": "b,a", "gizmos": "z"}, served)
	var got []string
	for _, or := range o.names {
		got = append(got, or.res.String()+"="+strings.Join(or.items, ","))
	}
	if strings.Join(got, " ") != "configmaps=a/x,a/y namespaces=b,a" {
		t.Errorf("order %v", got)
	}
	cm := schema.GroupResource{Resource: "configmaps"}
	if !o.named[itemKey(cm, "a", "y")] || o.named[itemKey(cm, "b", "y")] || !o.named[itemKey(schema.GroupResource{Resource: "namespaces"}, "", "b")] {
		t.Errorf("named %v", o.named)
	}
	if newOrder(nil, served) != nil {
		t.Error("an order without orderedResources")
	}
}
