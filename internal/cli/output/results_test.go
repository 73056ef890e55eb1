package output

import (
	"bytes"
	"strings"
	"testing"
)

func TestResults(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      []string
	}{
		{"every kind of message", `{"errors":{"velero":["reading the backup failed"],"cluster":[],"namespaces":{"app":["configmaps app/c: forbidden"]}},
			"warnings":{"velero":[],"cluster":["persistentvolumes pv1: left out"],"namespaces":{"b":["two"],"a":["one"]}}}`,
			[]string{"Errors:\n  Salvor:     reading the backup failed\n  Namespace app: configmaps app/c: forbidden\n",
				"Warnings:\n  Cluster:    persistentvolumes pv1: left out\n  Namespace a: one\n  Namespace b: two\n"}},
		{"nothing", `{"errors":{"velero":[],"cluster":[],"namespaces":{}},"warnings":{"velero":[],"cluster":[],"namespaces":{}}}`, nil},
		{"not results", `garbage`, []string{"Results (not in the expected shape:", "garbage"}},
	} {
		var out bytes.Buffer
		Results(&out, []byte(tc.raw))
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, w, out.String())
			}
		}
		if tc.want == nil && out.Len() != 0 {
			t.Errorf("%s: printed %q", tc.name, out.String())
		}
	}
}
