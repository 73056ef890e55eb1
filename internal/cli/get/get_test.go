package get

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestRenderLabelColumns: Velero's --label-columns adds a column per label
// (empty where an object has none) and --show-labels one with all of them,
// sorted, after the kind's columns and the wide ones.
func TestRenderLabelColumns(t *testing.T) {
	items := []salvorv1.Backup{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"team": "x", "env": "prod"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
	}
	table := Table[salvorv1.Backup]{
		Header: []string{"NAME"}, Row: func(b *salvorv1.Backup) []string { return []string{b.Name} },
		WideHeader: []string{"WIDE"}, WideRow: func(*salvorv1.Backup) []string { return []string{"w"} },
	}
	for _, tc := range []struct {
		name   string
		wide   bool
		labels Labels
		header []string
		rows   [][]string
	}{
		{"plain", false, Labels{}, []string{"NAME"}, [][]string{{"a"}, {"b"}}},
		{"label columns", false, Labels{Columns: []string{"team", "app.kubernetes.io/part-of"}},
			[]string{"NAME", "TEAM", "APP.KUBERNETES.IO/PART-OF"}, [][]string{{"a", "x", ""}, {"b", "", ""}}},
		{"show labels, wide", true, Labels{Show: true},
			[]string{"NAME", "WIDE", "LABELS"}, [][]string{{"a", "w", "env=prod,team=x"}, {"b", "w", "<none>"}}},
		{"both", false, Labels{Columns: []string{"env"}, Show: true},
			[]string{"NAME", "ENV", "LABELS"}, [][]string{{"a", "prod", "env=prod,team=x"}, {"b", "", "<none>"}}},
	} {
		header, rows := render[salvorv1.Backup](items, table, tc.wide, tc.labels)
		if !slices.Equal(header, tc.header) {
			t.Errorf("%s: header %v, want %v", tc.name, header, tc.header)
		}
		if !slices.EqualFunc(rows, tc.rows, slices.Equal[[]string]) {
			t.Errorf("%s: rows %v, want %v", tc.name, rows, tc.rows)
		}
	}
	if !slices.Equal(table.Header, []string{"NAME"}) {
		t.Errorf("render changed the kind's header: %v", table.Header)
	}
}
