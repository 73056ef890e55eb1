package get

import (
	"fmt"
	"io"
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
	o := &options[T, P]{kind: kind, table: table, keep: make([]bool, len(table.Filters))}
	cmd := &cobra.Command{
		Use:     "get [NAME...]",
		Short:   short,
		Example: example,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := o.listOptions(args)
			if err != nil {
				return err
			}
			c, err := k.Client()
			if err != nil {
				return err
			}
			items, err := kube.Fetch[T, P](cmd.Context(), c, k.Namespace, kind, args, list, opts...)
			if err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), args, o.filter(items))
		},
	}
	output.AddListFlag(cmd.Flags(), &o.format)
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "only objects with these labels, as kubectl takes them (app=web,tier!=db, env in (a,b))")
	cmd.Flags().StringSliceVarP(&o.columns.Columns, "label-columns", "L", nil, "a column for each of these labels' values (-L team,env or -L team -L env)")
	cmd.Flags().BoolVar(&o.columns.Show, "show-labels", false, "a last column with each object's labels")
	for i, f := range table.Filters {
		cmd.Flags().BoolVar(&o.keep[i], f.Flag, false, f.Usage)
	}
	return cmd
}

// options are what one `get` was asked: its kind's table and its flags.
type options[T any, P kube.Object[T]] struct {
	kind     string
	table    Table[T]
	format   output.Format
	selector string
	columns  Labels
	// keep[i] is table.Filters[i]'s flag.
	keep []bool
}

// listOptions judges the flags against the names given, before anything
// is read from the cluster, and says what to list.
func (o *options[T, P]) listOptions(names []string) ([]client.ListOption, error) {
	if err := o.format.ValidateList(); err != nil {
		return nil, err
	}
	if o.selector == "" {
		return nil, nil
	}
	if len(names) > 0 {
		return nil, fmt.Errorf("give names or --selector, not both")
	}
	sel, err := labels.Parse(o.selector)
	if err != nil {
		return nil, fmt.Errorf("--selector %q: %w", o.selector, err)
	}
	return []client.ListOption{client.MatchingLabelsSelector{Selector: sel}}, nil
}

// filter keeps the items that every filter flag given keeps.
func (o *options[T, P]) filter(items []T) []T {
	for i, f := range o.table.Filters {
		if o.keep[i] {
			items = slices.DeleteFunc(items, func(obj T) bool { return !f.Keep(&obj) })
		}
	}
	return items
}

// print writes items in the format asked; names are the names the
// command was given.
func (o *options[T, P]) print(w io.Writer, names []string, items []T) error {
	// As kubectl prints them: one object when one is named, else a List
	// (kubectl apply -f takes it back; jq .items[] reads it).
	var v any = struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Items      []T    `json:"items"`
	}{"v1", "List", append([]T{}, items...)}
	if len(names) == 1 && len(items) == 1 {
		v = items[0]
	}
	if done, err := o.format.Structured(w, v); done {
		return err
	}
	if o.format == "name" {
		for i := range items {
			fmt.Fprintf(w, "%s.%s/%s\n", o.kind, salvorv1.GroupVersion.Group, P(&items[i]).GetName())
		}
		return nil
	}
	header, rows := render[T, P](items, o.table, o.format == "wide", o.columns)
	return output.Table(w, header, rows)
}
