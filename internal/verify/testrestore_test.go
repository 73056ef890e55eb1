package verify

import (
	"maps"
	"strings"
	"testing"
)

func TestTargets(t *testing.T) {
	list := map[string][]string{
		"v1/ConfigMap":        {"shop/a", "shop/b", "web/c"},
		"v1/Namespace":        {"shop", "web", "empty"},
		"v1/PersistentVolume": {"pv-1"},
		"rbac.authorization.k8s.io/v1/ClusterRole": {"admin"},
	}
	for _, tc := range []struct {
		prefix string
		want   map[string]string
		err    string
	}{
		{prefix: "drill", want: map[string]string{"shop": "drill-shop", "web": "drill-web", "empty": "drill-empty"}},
		{prefix: "Drill", err: `restore-into prefix "Drill"`},
		{prefix: "", err: `restore-into prefix ""`},
		{prefix: strings.Repeat("x", 60), err: "choose a shorter prefix"},
	} {
		got, err := Targets(list, tc.prefix)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("prefix %q: error %v, want one with %q", tc.prefix, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("prefix %q: %v, %v; want %v", tc.prefix, got, err, tc.want)
		}
	}
}
