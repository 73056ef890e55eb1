package output

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// Confirmed tells whether to go on with what question asks about: yes when
// the user gave --confirm (confirmed), or when there is no terminal to ask
// on (a script, CI); otherwise the answer to the question.
func Confirmed(in io.Reader, out io.Writer, confirmed bool, question string) bool {
	if confirmed {
		return true
	}
	if !Terminal(in) {
		return true
	}
	return Ask(in, out, question)
}

// Terminal tells whether in is a terminal someone can answer on.
func Terminal(in io.Reader) bool {
	f, ok := in.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Ask prints question and tells whether the answer read from in is yes.
func Ask(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprintf(out, "%s [y/N] ", question)
	answer, _ := bufio.NewReader(in).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(answer))
	return a == "y" || a == "yes"
}
