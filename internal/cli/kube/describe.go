package kube

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Describes lets a `describe NAME` command of a kind take Velero's forms
// too: several names, none (every object of the kind in the namespace) or
// --selector, each described in turn with a blank line between. With -o
// json or yaml it takes one name (`get -o yaml` prints a list). list is an
// empty list of the kind.
func Describes(cmd *cobra.Command, k *Options, kind string, list client.ObjectList) *cobra.Command {
	selector := cmd.Flags().StringP("selector", "l", "", "describe the "+kind+"s whose labels match this selector (app=web,tier!=db)")
	cmd.Use = "describe [NAME...] [--selector SELECTOR]"
	cmd.Long += "\n\nWith no name it describes every " + kind + ", with --selector those whose labels match."
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 && *selector != "" {
			return fmt.Errorf("give names or --selector, not both")
		}
		if f := cmd.Flags().Lookup("output"); f != nil && f.Value.String() != "table" && len(args) != 1 {
			return fmt.Errorf("-o %s describes one %s: give its name (salvor %s get -o %s lists them all)", f.Value.String(), kind, kind, f.Value.String())
		}
		return nil
	}
	one := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		names := args
		if len(names) == 0 {
			var err error
			if names, err = k.names(cmd.Context(), kind, list, *selector); err != nil {
				return err
			}
			if len(names) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "No %ss.\n", kind)
				return nil
			}
		}
		for i, name := range names {
			if i > 0 {
				fmt.Fprintln(cmd.OutOrStdout())
			}
			if err := one(cmd, []string{name}); err != nil {
				return err
			}
		}
		return nil
	}
	return cmd
}
