package backup

import (
	"testing"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestAllNamespaces: "*" among the namespace filter's entries is every
// namespace, whatever else is listed beside it (patterns included); only
// then are cluster-scoped resources backed up unless the spec says.
func TestAllNamespaces(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		included []string
		icr      *bool
		all      bool
		cluster  bool
	}{
		{nil, nil, true, true},
		{[]string{"*"}, nil, true, true},
		{[]string{"*", "app-*"}, nil, true, true},
		{[]string{"app-*"}, nil, false, false},
		{[]string{"app"}, &yes, false, true},
		{[]string{"*"}, &no, true, false},
	} {
		s := scopeOf(salvorv1.BackupSpec{IncludedNamespaces: tc.included, IncludeClusterResources: tc.icr})
		if got := s.allNamespaces(); got != tc.all {
			t.Errorf("%v: allNamespaces() = %v", tc.included, got)
		}
		if got := s.wantsClusterResources(); got != tc.cluster {
			t.Errorf("%v, includeClusterResources %v: wantsClusterResources() = %v", tc.included, tc.icr, got)
		}
	}
}
