package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

// verbFirst returns `salvor VERB NOUN`, the order Velero's CLI also takes
// (`velero get backups`, `velero create backup b1`), so a Velero user's
// commands and scripts run as typed. Each noun lends its own VERB command,
// renamed for the noun and answering to the noun's aliases (`backups`,
// `bsl`): both orders run one command with one set of flags. nouns are
// fresh noun commands, built for this verb alone, since a cobra command
// has one parent.
func verbFirst(verb, short string, nouns ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: verb, Short: short}
	for _, noun := range nouns {
		for _, sub := range noun.Commands() {
			if sub.Name() != verb {
				continue
			}
			noun.RemoveCommand(sub)
			_, args, _ := strings.Cut(sub.Use, " ")
			sub.Use = strings.TrimSpace(noun.Name() + " " + args)
			sub.Aliases = noun.Aliases
			sub.Example = strings.ReplaceAll(sub.Example, "salvor "+noun.Name()+" "+verb, "salvor "+verb+" "+noun.Name())
			cmd.AddCommand(sub)
		}
	}
	return cmd
}
