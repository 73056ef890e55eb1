package kube

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/output"
)

// Chooses lets a command acting on `NAME...` of a kind take Velero's
// other ways to choose them — --all or --selector; one of the three — and
// run on the names chosen. before, when not nil, runs first with the names
// and whether they were chosen by --all or --selector rather than given;
// its error stops the command. list is an empty list of the kind.
func Chooses(cmd *cobra.Command, k *Options, kind string, list client.ObjectList, before func(cmd *cobra.Command, names []string, selected bool) error) *cobra.Command {
	f := cmd.Flags()
	verb, _, _ := strings.Cut(cmd.Use, " ")
	all := f.Bool("all", false, verb+" every "+kind+" in Salvor's namespace")
	selector := f.StringP("selector", "l", "", verb+" the "+kind+"s whose labels match this selector (app=web,tier!=db)")
	cmd.Use = verb + " [NAME...] [--all | --selector SELECTOR]"
	cmd.Args = func(_ *cobra.Command, args []string) error {
		ways := 0
		for _, given := range []bool{len(args) > 0, *all, *selector != ""} {
			if given {
				ways++
			}
		}
		if ways != 1 {
			return fmt.Errorf("give the names of the %ss to %s, --all, or --selector: one of them", kind, verb)
		}
		return nil
	}
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		selected := *all || *selector != ""
		if selected {
			names, err := k.names(cmd.Context(), kind, list, *selector)
			if err != nil {
				return err
			}
			if len(names) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "No %ss to %s.\n", kind, verb)
				return nil
			}
			args = names
		}
		if before != nil {
			if err := before(cmd, args, selected); err != nil {
				return err
			}
		}
		return run(cmd, args)
	}
	return cmd
}

// Deletes is Chooses for a `delete NAME...` command, and makes it sure:
// on a terminal it asks first (question is a format taking the names
// chosen), --confirm does not ask. A script (no terminal) that names what
// it deletes is not asked; one that deletes by --all or --selector must
// give --confirm, since there a mistake deletes much, and nothing names
// what.
func Deletes(cmd *cobra.Command, k *Options, kind string, list client.ObjectList, question string) *cobra.Command {
	confirm := cmd.Flags().Bool("confirm", false, "delete without asking")
	cmd.Long += "\n\nNames, --all or --selector choose what goes. On a terminal it asks first;\n" +
		"--confirm (Velero's flag) does not ask. A script (no terminal) is not asked\n" +
		"when it gives names, and must give --confirm with --all or --selector."
	return Chooses(cmd, k, kind, list, func(cmd *cobra.Command, names []string, selected bool) error {
		if selected && !*confirm && !output.Terminal(cmd.InOrStdin()) {
			return fmt.Errorf("nothing deleted: this would delete %d %ss (%s) without naming them; give --confirm to do so from a script",
				len(names), kind, shortList(names))
		}
		if !output.Confirmed(cmd.InOrStdin(), cmd.OutOrStdout(), *confirm, fmt.Sprintf(question, shortList(names))) {
			return fmt.Errorf("nothing deleted")
		}
		return nil
	})
}

// names lists the objects of a kind in the namespace, those matching
// selector when it is not empty.
func (o *Options) names(ctx context.Context, kind string, list client.ObjectList, selector string) ([]string, error) {
	opts := []client.ListOption{client.InNamespace(o.Namespace)}
	if selector != "" {
		sel, err := labels.Parse(selector)
		if err != nil {
			return nil, fmt.Errorf("--selector %q: %w", selector, err)
		}
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	c, err := o.Client()
	if err != nil {
		return nil, err
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing %ss in namespace %s: %w", kind, o.Namespace, err)
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(objs))
	for _, obj := range objs {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		names = append(names, m.GetName())
	}
	return names, nil
}

// shortList names up to ten, then says how many more.
func shortList(names []string) string {
	if len(names) > 10 {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:10], ", "), len(names)-10)
	}
	return strings.Join(names, ", ")
}
