package cli

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/shlex"

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
	files := []string{filepath.Join(root, "README.md")}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, docs...)
	checked := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		inCode, cont := false, ""
		line := 0
		for sc.Scan() {
			line++
			text := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(text, "```") {
				inCode = !inCode
				continue
			}
			if !inCode {
				continue
			}
			if cont != "" {
				text = cont + " " + text
				cont = ""
			}
			if strings.HasSuffix(text, `\`) {
				cont = strings.TrimSuffix(text, `\`)
				continue
			}
			text = strings.TrimPrefix(text, "$ ")
			text = strings.TrimPrefix(text, "./bin/")
			if !strings.HasPrefix(text, "salvor ") {
				continue
			}
			// A comment or a pipe ends the command (not inside quotes: a
			// cron expression has none of these).
			if i := strings.IndexAny(text, "#&|"); i >= 0 {
				text = strings.TrimSpace(text[:i])
			}
			words, err := shlex.Split(text)
			if err != nil {
				t.Errorf("%s:%d: %q: %v", filepath.Base(f), line, text, err)
				continue
			}
			args := words[1:]
			cmd, rest, err := NewRootCommand().Find(args)
			if err != nil {
				t.Errorf("%s:%d: %q: %v", filepath.Base(f), line, text, err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s:%d: %q: %v", filepath.Base(f), line, text, err)
				continue
			}
			if cmd.Args != nil {
				if err := cmd.Args(cmd, cmd.Flags().Args()); err != nil {
					t.Errorf("%s:%d: %q: %v", filepath.Base(f), line, text, err)
				}
			}
			checked++
		}
		fh.Close()
	}
	if checked < 10 {
		t.Errorf("only %d documented commands found; the scan is broken", checked)
	}
}
