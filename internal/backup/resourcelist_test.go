package backup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// TestResourceList adds names in a random order, enough for several runs on
// disk, and reads back every name once, sorted within its resource, in
// valid JSON; Close removes the runs.
func TestResourceList(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  string
		n    int
		runs int
	}{
		{"empty", t.TempDir(), 0, 0},
		{"in memory", "", 1000, 0},
		{"runs on disk", t.TempDir(), 3*1000 + 17, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewResourceList(tc.dir)
			l.budget = 1000
			want := map[string][]string{}
			order := rand.Perm(tc.n)
			for _, i := range order {
				res, name := "v1/ConfigMap", fmt.Sprintf("ns-%d/cm-%06d", i%7, i)
				if i%5 == 0 {
					res, name = "v1/Namespace", fmt.Sprintf("ns-\"%06d\"", i) // quoted on the way out
				}
				want[res] = append(want[res], name)
				if err := l.Add(res, name); err != nil {
					t.Fatal(err)
				}
			}
			for _, names := range want {
				slices.Sort(names)
			}
			if len(l.runs) != tc.runs {
				t.Errorf("%d runs on disk, want %d", len(l.runs), tc.runs)
			}
			var buf bytes.Buffer
			if err := l.WriteJSON(&buf); err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("%v in %.200s", err, buf.String())
			}
			if len(got) != len(want) {
				t.Fatalf("%d resources, want %d", len(got), len(want))
			}
			for res, names := range want {
				if !slices.Equal(got[res], names) {
					t.Errorf("%s: %d names, want %d (first %v)", res, len(got[res]), len(names), got[res][:min(3, len(got[res]))])
				}
			}
			if m, err := l.Map(); err != nil || len(m) != len(want) {
				t.Errorf("Map: %d resources, %v", len(m), err)
			}
			l.Close()
			if tc.dir != "" {
				if left, _ := os.ReadDir(tc.dir); len(left) != 0 {
					t.Errorf("Close left %d files", len(left))
				}
			}
		})
	}
}
