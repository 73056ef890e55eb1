package output

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestBarsEndOnTheirLastFigures: bars drawn for a wait that ends (Ctrl-C,
// or the run's end) show what was last reported, not a whole bar: work
// that stopped going, or that still goes, is not 100 %.
func TestBarsEndOnTheirLastFigures(t *testing.T) {
	var out bytes.Buffer
	b := NewBars(&out, "nightly", "items", 200)
	subs := []Sub{
		{Key: "1", Label: "  example.io/a configmaps app/c", Units: "seconds", Done: 7, Total: 12},
		{Key: "2", Label: "  example.io/a configmaps app/d", Units: "seconds", Done: 3, Total: 45},
	}
	b.Update("WaitingForPluginOperations", 5, 5, subs)
	// The first stops going (its end is printed elsewhere).
	b.Update("WaitingForPluginOperations", 5, 5, subs[1:])
	b.Stop()
	got := out.String()
	for _, want := range []string{"5 / 5 items", "7 / 12 seconds", "ended", "3 / 45 seconds", "still running"} {
		if !strings.Contains(got, want) {
			t.Errorf("the bars lack %q:\n%s", want, got)
		}
	}
	for _, wrong := range []string{"12 / 12 seconds", "7 / 7 seconds", "3 / 3 seconds", "45 / 45 seconds"} {
		if strings.Contains(got, wrong) {
			t.Errorf("a bar ends on %q, figures nobody reported:\n%s", wrong, got)
		}
	}
}

// TestTables: a cell keeps to its line (a multi-line error would break the
// rows after it); an indented table keeps its header over its columns;
// spans read as kubectl's ages.
func TestTables(t *testing.T) {
	var out bytes.Buffer
	if err := Table(&out, []string{"NAME", "PHASE", "MESSAGE"}, [][]string{
		{"a", "Unavailable", "opening the store:\n  dial tcp: refused\n"},
		{"b", "Available", "tab\there"},
	}); err != nil {
		t.Fatal(err)
	}
	want := "NAME  PHASE        MESSAGE\n" +
		"a     Unavailable  opening the store:; dial tcp: refused\n" +
		"b     Available    tab here\n"
	if out.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	if err := IndentedTable(&out, "  ", []string{"VOLUME", "PHASE"}, [][]string{{"pvc-1234", "Completed"}}); err != nil {
		t.Fatal(err)
	}
	if want := "  VOLUME    PHASE\n  pvc-1234  Completed\n"; out.String() != want {
		t.Errorf("indented table:\n%q\nwant\n%q", out.String(), want)
	}
	for d, want := range map[time.Duration]string{
		45 * time.Second:    "45s",
		24 * time.Hour:      "24h",
		720 * time.Hour:     "30d",
		29*24*time.Hour + 5: "29d",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%s) = %q, want %q", d, got, want)
		}
	}
}
