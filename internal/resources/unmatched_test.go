package resources

import (
	"reflect"
	"testing"
)

func TestUnmatchedNamespaces(t *testing.T) {
	present := map[string]bool{"app": true, "plain": true, "default": true}
	for _, tc := range []struct {
		names []string
		want  []string
	}{
		{nil, nil},
		{[]string{"*", "app"}, nil},
		{[]string{"ap"}, []string{`namespace "ap" in includedNamespaces matches no namespace in the cluster: did you mean "app"? (there are app, default, plain)`}},
		{[]string{"plian"}, []string{`namespace "plian" in includedNamespaces matches no namespace in the cluster: did you mean "plain"? (there are app, default, plain)`}},
		{[]string{"a*", "[dp]*"}, nil},
		{[]string{"web-*"}, []string{`namespace "web-*" in includedNamespaces matches no namespace in the cluster (there are app, default, plain)`}},
		{[]string{"monitoring"}, []string{`namespace "monitoring" in includedNamespaces matches no namespace in the cluster (there are app, default, plain)`}},
	} {
		if got := UnmatchedNamespaces("includedNamespaces", tc.names, present, "in the cluster"); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: got %q\nwant %q", tc.names, got, tc.want)
		}
	}
	if got := UnmatchedNamespaces("excludedNamespaces", []string{"x"}, nil, "in backup b"); len(got) != 1 ||
		got[0] != `namespace "x" in excludedNamespaces matches no namespace in backup b (there are none)` {
		t.Errorf("no namespaces: %q", got)
	}
	many := map[string]bool{}
	for _, n := range []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "b1", "b2", "b3"} {
		many[n] = true
	}
	if got := UnmatchedNamespaces("includedNamespaces", []string{"zzzz"}, many, "in the cluster"); len(got) != 1 ||
		got[0] != `namespace "zzzz" in includedNamespaces matches no namespace in the cluster (there are a1, a2, a3, a4, a5, a6, a7, a8, a9, b1 and 2 more)` {
		t.Errorf("many namespaces: %q", got)
	}
}
