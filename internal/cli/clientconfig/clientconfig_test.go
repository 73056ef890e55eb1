package clientconfig

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSet: `client config set` judges every argument before the file is
// written, and leaves the config it was given as it was.
func TestSet(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, tc := range []struct {
		name    string
		before  map[string]string
		args    []string
		want    map[string]string
		refused string // "" when accepted
	}{
		{name: "namespace", args: []string{"namespace=backup-system"}, want: map[string]string{Namespace: "backup-system"}},
		{name: "nothing before", before: nil, args: []string{"namespace=a"}, want: map[string]string{Namespace: "a"}},
		{name: "empty removes", before: map[string]string{Namespace: "a", CACert: ca}, args: []string{"namespace="}, want: map[string]string{CACert: ca}},
		{name: "later wins", args: []string{"namespace=a", "namespace=b"}, want: map[string]string{Namespace: "b"}},
		{name: "cacert made absolute", args: []string{"cacert=ca.pem"}, want: map[string]string{CACert: ca}},
		{name: "keys it does not know kept", before: map[string]string{"other": "x"}, args: []string{"namespace=a"}, want: map[string]string{"other": "x", Namespace: "a"}},
		{name: "no =", args: []string{"namespace"}, refused: `"namespace": want KEY=VALUE`},
		{name: "unknown key", args: []string{"colour=red"}, refused: `no client config key "colour": the keys are cacert, namespace`},
		{name: "Velero's key", args: []string{"features=x"}, refused: "features is Velero's: Salvor has no feature flags"},
		{name: "bad namespace", args: []string{"namespace=Not_A_Label"}, refused: `namespace "Not_A_Label"`},
		{name: "missing cacert", args: []string{"cacert=nowhere.pem"}, refused: "cacert: stat " + filepath.Join(dir, "nowhere.pem")},
		{name: "all or none", before: map[string]string{Namespace: "a"}, args: []string{"namespace=b", "colour=red"}, refused: `no client config key "colour"`},
	} {
		before := maps.Clone(tc.before)
		got, err := set(tc.before, tc.args)
		if !maps.Equal(tc.before, before) {
			t.Errorf("%s: the config given changed to %v", tc.name, tc.before)
		}
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.refused)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
