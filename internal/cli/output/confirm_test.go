package output

import (
	"strings"
	"testing"
)

func TestAsk(t *testing.T) {
	for answer, want := range map[string]bool{"y\n": true, "Yes\n": true, " y ": true, "n\n": false, "\n": false, "": false, "yy\n": false} {
		var out strings.Builder
		if got := Ask(strings.NewReader(answer), &out, "Delete backup b?"); got != want {
			t.Errorf("answer %q: %v", answer, got)
		}
		if out.String() != "Delete backup b? [y/N] " {
			t.Errorf("asked %q", out.String())
		}
	}
}

// TestConfirmedAsksOnlyOnATerminal: --confirm, or input that is not a
// terminal (a script), goes on without asking.
func TestConfirmedAsksOnlyOnATerminal(t *testing.T) {
	var out strings.Builder
	if !Confirmed(strings.NewReader("n\n"), &out, false, "Delete?") || out.Len() != 0 {
		t.Errorf("asked a script: %q", out.String())
	}
	if !Confirmed(nil, &out, true, "Delete?") || out.Len() != 0 {
		t.Errorf("asked despite --confirm: %q", out.String())
	}
}
