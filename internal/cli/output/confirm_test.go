package output

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
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

// TestAskBeforeDelete: the command takes --confirm, says so in its help,
// and runs when there is nobody to ask (input not a terminal).
func TestAskBeforeDelete(t *testing.T) {
	for _, args := range [][]string{{"a", "b"}, {"a", "--confirm"}} {
		ran := false
		cmd := AskBeforeDelete(&cobra.Command{Use: "delete", Long: "Deletes.", RunE: func(*cobra.Command, []string) error { ran = true; return nil }}, "Delete thing %s?")
		cmd.SetIn(strings.NewReader("n\n"))
		var out strings.Builder
		cmd.SetOut(&out)
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil || !ran || out.Len() != 0 {
			t.Errorf("%v: ran %v, err %v, printed %q", args, ran, err, out.String())
		}
		if !strings.HasSuffix(cmd.Long, "--confirm (Velero's flag) does not ask.") {
			t.Errorf("help: %q", cmd.Long)
		}
	}
}
