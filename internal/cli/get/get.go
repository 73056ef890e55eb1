package get

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Table is how a kind is listed: a header and a row per object, and the
// columns -o wide adds.
type Table[T any] struct {
	Header     []string
	Row        func(*T) []string
	WideHeader []string
	WideRow    func(*T) []string
	// Filters are boolean flags of the kind's own that keep only the
	// objects they say (backup-location get --default).
	Filters []Filter[T]
}

// Filter is a boolean flag that lists only the objects Keep says.
type Filter[T any] struct {
	Flag, Usage string
	Keep        func(*T) bool
}

// Labels are the label columns Velero's and kubectl's get add: one per
// key of --label-columns, and all of them with --show-labels.
type Labels struct {
	Columns []string
	Show    bool
}

// render is the table of items: the kind's columns (and wide ones), then
// the label columns.
func render[T any, P kube.Object[T]](items []T, table Table[T], wide bool, l Labels) ([]string, [][]string) {
	header := slices.Clone(table.Header)
	if wide {
		header = append(header, table.WideHeader...)
	}
	for _, key := range l.Columns {
		header = append(header, strings.ToUpper(key))
	}
	if l.Show {
		header = append(header, "LABELS")
	}
	rows := make([][]string, 0, len(items))
	for i := range items {
		row := table.Row(&items[i])
		if wide {
			row = append(row, table.WideRow(&items[i])...)
		}
		labels := P(&items[i]).GetLabels()
		for _, key := range l.Columns {
			row = append(row, labels[key])
		}
		if l.Show {
			pairs := make([]string, 0, len(labels))
			for k, v := range labels {
				pairs = append(pairs, k+"="+v)
			}
			slices.Sort(pairs)
			row = append(row, output.Or(strings.Join(pairs, ","), "<none>"))
		}
		rows = append(rows, row)
	}
	return header, rows
}

// Command returns `get [NAME...]` for a kind (lower case, singular, as
// -o name prints it); list is an empty list of it.
func Command[T any, P kube.Object[T]](k *kube.Options, kind, short, example string, list client.ObjectList, table Table[T]) *cobra.Command {
	var format output.Format
	var selector string
	var columns Labels
	keep := make([]bool, len(table.Filters))
	cmd := &cobra.Command{
		Use:     "get [NAME...]",
		Short:   short,
		Example: example,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.ValidateList(); err != nil {
				return err
			}
			var opts []client.ListOption
			if selector != "" {
				if len(args) > 0 {
					return fmt.Errorf("give names or --selector, not both")
				}
				sel, err := labels.Parse(selector)
				if err != nil {
					return fmt.Errorf("--selector %q: %w", selector, err)
				}
				opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
			}
			c, err := k.Client()
			if err != nil {
				return err
			}
			items, err := kube.Fetch[T, P](cmd.Context(), c, k.Namespace, kind, args, list, opts...)
			if err != nil {
				return err
			}
			for i, f := range table.Filters {
				if keep[i] {
					items = slices.DeleteFunc(items, func(o T) bool { return !f.Keep(&o) })
				}
			}
			// As kubectl prints them: one object when one is named, else a
			// List (kubectl apply -f takes it back; jq .items[] reads it).
			var v any = struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Items      []T    `json:"items"`
			}{"v1", "List", append([]T{}, items...)}
			if len(args) == 1 && len(items) == 1 {
				v = items[0]
			}
			if done, err := format.Structured(cmd.OutOrStdout(), v); done {
				return err
			}
			if format == "name" {
				for i := range items {
					fmt.Fprintf(cmd.OutOrStdout(), "%s.%s/%s\n", kind, salvorv1.GroupVersion.Group, P(&items[i]).GetName())
				}
				return nil
			}
			header, rows := render[T, P](items, table, format == "wide", columns)
			return output.Table(cmd.OutOrStdout(), header, rows)
		},
	}
	output.AddListFlag(cmd.Flags(), &format)
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "only objects with these labels, as kubectl takes them (app=web,tier!=db, env in (a,b))")
	cmd.Flags().StringSliceVarP(&columns.Columns, "label-columns", "L", nil, "a column for each of these labels' values (-L team,env or -L team -L env)")
	cmd.Flags().BoolVar(&columns.Show, "show-labels", false, "a last column with each object's labels")
	for i, f := range table.Filters {
		cmd.Flags().BoolVar(&keep[i], f.Flag, false, f.Usage)
	}
	return cmd
}
