package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// UsageError is a command line the CLI does not understand: an unknown
// command, flag or argument. The binary exits 2 on it, as shells and
// scripts expect, and 1 on every other failure.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// strict makes every command reject what it does not understand with a
// UsageError: flags (through the root's flag error function), arguments
// (each command's own validator, wrapped), and — for commands that only
// group others — unknown subcommands, with suggestions, where cobra would
// print the help and succeed.
func strict(root *cobra.Command) {
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &UsageError{fmt.Errorf("%w\nRun '%s --help' for usage", err, c.CommandPath())}
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = unknownSubcommand
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		} else if validate := c.Args; validate != nil {
			c.Args = func(c *cobra.Command, args []string) error {
				if err := validate(c, args); err != nil {
					hint := ""
					for _, a := range args {
						if a == "true" || a == "false" {
							// `--snapshot-volumes false`: the flag took its default
							// and the word became an argument.
							hint = fmt.Sprintf("\nA flag's true or false goes after '=', as in --flag=%s", a)
						}
					}
					return &UsageError{fmt.Errorf("%s: %w%s\nRun '%s --help' for usage", c.CommandPath(), err, hint, c.CommandPath())}
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func unknownSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's own default, set only where it suggests itself
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return &UsageError{fmt.Errorf("%s\nRun '%s --help' for usage", msg, c.CommandPath())}
}
