package output

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// AskBeforeDelete gives a delete command Velero's --confirm and, without
// it on a terminal, the question (a format taking the names given) asked
// before the command runs; the answer no deletes nothing.
func AskBeforeDelete(cmd *cobra.Command, question string) *cobra.Command {
	confirm := cmd.Flags().Bool("confirm", false, "delete without asking")
	cmd.Long += "\n\nOn a terminal it asks first; --confirm (Velero's flag) does not ask."
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if !Confirmed(cmd.InOrStdin(), cmd.OutOrStdout(), *confirm, fmt.Sprintf(question, strings.Join(args, ", "))) {
			return fmt.Errorf("nothing deleted")
		}
		return nil
	}
	return cmd
}

// Confirmed tells whether to go on with what question asks about: yes when
// the user gave --confirm (confirmed), or when there is no terminal to ask
// on (a script, CI); otherwise the answer to the question.
func Confirmed(in io.Reader, out io.Writer, confirmed bool, question string) bool {
	if confirmed {
		return true
	}
	if f, ok := in.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return true
	}
	return Ask(in, out, question)
}

// Ask prints question and tells whether the answer read from in is yes.
func Ask(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprintf(out, "%s [y/N] ", question)
	answer, _ := bufio.NewReader(in).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(answer))
	return a == "y" || a == "yes"
}
