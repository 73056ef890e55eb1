package demo

import (
	"strings"
	"testing"
)

// TestIndentOnlyWhereLinesStart: what salvor prints comes in writes that
// end anywhere (tabwriter writes a table cell by cell); each line gets the
// indent once, and nothing inside a line.
func TestIndentOnlyWhereLinesStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"whole lines", []string{"a\nb\n"}, "      a\n      b\n"},
		{"a line in pieces", []string{"PLUGIN  ", "ITEM", "\n", "x  ", "y\n"}, "      PLUGIN  ITEM\n      x  y\n"},
		{"a write ending one line and starting the next", []string{"a", "b\nc", "d\n"}, "      ab\n      cd\n"},
		{"no final newline", []string{"a\n", "b"}, "      a\n      b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			w := &indent{w: &out}
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if out.String() != tc.want {
				t.Errorf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
}
