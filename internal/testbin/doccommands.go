package testbin

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/shlex"
)

// DocCommand is a `salvor ...` command shown in a code block of the
// README or docs/.
type DocCommand struct {
	File string // relative to the module root
	Line int
	Text string // as written, continuation lines joined
	// Args are the words after `salvor`, a comment or pipe cut off.
	Args []string
	// Background is true for a command written with a trailing `&`.
	Background bool
}

// DocCommands returns the documented commands of README.md and docs/*.md,
// file by file in the order they appear.
func DocCommands(root string) ([]DocCommand, error) {
	files := []string{filepath.Join(root, "README.md")}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files = append(files, docs...)
	var out []DocCommand
	for _, f := range files {
		cmds, err := docCommands(root, f)
		if err != nil {
			return nil, err
		}
		out = append(out, cmds...)
	}
	return out, nil
}

func docCommands(root, f string) ([]DocCommand, error) {
	fh, err := os.Open(f)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	rel, _ := filepath.Rel(root, f)
	var out []DocCommand
	sc := bufio.NewScanner(fh)
	inCode, cont, line, start := false, "", 0, 0
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
		} else {
			start = line
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
		// A comment, a pipe or a trailing & ends the command (not inside
		// quotes: a cron expression has none of these).
		cmd := text
		background := false
		if i := strings.IndexAny(cmd, "#&|"); i >= 0 {
			background = cmd[i] == '&'
			cmd = strings.TrimSpace(cmd[:i])
		}
		words, err := shlex.Split(cmd)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %q: %w", rel, start, cmd, err)
		}
		out = append(out, DocCommand{File: rel, Line: start, Text: cmd, Args: words[1:], Background: background})
	}
	return out, sc.Err()
}
