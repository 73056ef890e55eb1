package get

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/output"

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

// backups is how `backup get` lists, for the options' tests: a name
// column, a wide one, and a filter flag.
func backups() *options[salvorv1.Backup, *salvorv1.Backup] {
	table := Table[salvorv1.Backup]{
		Header: []string{"NAME"}, Row: func(b *salvorv1.Backup) []string { return []string{b.Name} },
		WideHeader: []string{"PHASE"}, WideRow: func(b *salvorv1.Backup) []string { return []string{string(b.Status.Phase)} },
		Filters: []Filter[salvorv1.Backup]{{Flag: "completed", Keep: func(b *salvorv1.Backup) bool { return b.Status.Phase == salvorv1.BackupPhaseCompleted }}},
	}
	return &options[salvorv1.Backup, *salvorv1.Backup]{kind: "backup", table: table, format: "table", keep: make([]bool, 1)}
}

// TestListOptions: the flags are judged before anything is listed; a
// selector becomes the list's label selector.
func TestListOptions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		format   output.Format
		selector string
		names    []string
		refused  string // "" when accepted
		selects  string // the selector listed with, "" for none
	}{
		{name: "nothing", format: "table"},
		{name: "names", format: "name", names: []string{"a", "b"}},
		{name: "selector", format: "table", selector: "team=x,env in (a,b)", selects: "env in (a,b),team=x"},
		{name: "names and selector", format: "table", selector: "team=x", names: []string{"a"}, refused: "give names or --selector, not both"},
		{name: "bad selector", format: "table", selector: "team in (a", refused: `--selector "team in (a"`},
		{name: "bad format", format: "csv", refused: `--output "csv": must be table, wide, name, json or yaml`},
	} {
		o := backups()
		o.format, o.selector = tc.format, tc.selector
		opts, err := o.listOptions(tc.names)
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
		var got string
		if len(opts) == 1 {
			got = opts[0].(client.MatchingLabelsSelector).String()
		} else if len(opts) > 1 {
			t.Errorf("%s: %d list options, want at most one", tc.name, len(opts))
		}
		if got != tc.selects {
			t.Errorf("%s: lists with selector %q, want %q", tc.name, got, tc.selects)
		}
	}
}

// TestPrint: what `get` prints for the items listed, by format, names
// given and filter flags.
func TestPrint(t *testing.T) {
	items := func() []salvorv1.Backup {
		return []salvorv1.Backup{
			{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseCompleted}},
			{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseFailed}},
		}
	}
	for _, tc := range []struct {
		name      string
		format    output.Format
		names     []string
		completed bool
		want      string
	}{
		{name: "table", format: "table", want: "NAME\na\nb\n"},
		{name: "wide", format: "wide", want: "NAME  PHASE\na     Completed\nb     Failed\n"},
		{name: "filtered", format: "table", completed: true, want: "NAME\na\n"},
		{name: "names", format: "name", want: "backup.salvor.dev/a\nbackup.salvor.dev/b\n"},
		{name: "one named is the object", format: "json", names: []string{"a"}, completed: true, want: `"name": "a"`},
		{name: "all are a List", format: "yaml", want: "kind: List\n"},
		{name: "one listed unnamed is a List", format: "json", completed: true, want: `"kind": "List"`},
	} {
		o := backups()
		o.format, o.keep[0] = tc.format, tc.completed
		var out strings.Builder
		if err := o.print(&out, tc.names, o.filter(items())); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := out.String(); !strings.Contains(got, tc.want) {
			t.Errorf("%s: printed\n%s\nwant it to hold\n%s", tc.name, got, tc.want)
		}
		if tc.format == "json" && len(tc.names) == 1 && strings.Contains(out.String(), `"kind": "List"`) {
			t.Errorf("%s: one object named printed a List", tc.name)
		}
	}
}
