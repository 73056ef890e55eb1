package cli

import (
	"testing"

	"github.com/salvor-dev/salvor/internal/testbin"
)

// TestDocumentedCommandsParse finds every `salvor ...` command in the README
// and docs/ (inside code blocks) and checks that the command exists and
// accepts the flags as written.
func TestDocumentedCommandsParse(t *testing.T) {
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := testbin.DocCommands(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range cmds {
		cmd, rest, err := NewRootCommand().Find(d.Args)
		if err != nil {
			t.Errorf("%s:%d: %q: %v", d.File, d.Line, d.Text, err)
			continue
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("%s:%d: %q: %v", d.File, d.Line, d.Text, err)
			continue
		}
		if cmd.Args != nil {
			if err := cmd.Args(cmd, cmd.Flags().Args()); err != nil {
				t.Errorf("%s:%d: %q: %v", d.File, d.Line, d.Text, err)
			}
		}
	}
	if len(cmds) < 10 {
		t.Errorf("only %d documented commands found; the scan is broken", len(cmds))
	}
}
