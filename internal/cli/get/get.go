package get

import (
	"fmt"

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
}

// Command returns `get [NAME...]` for a kind (lower case, singular, as
// -o name prints it); list is an empty list of it.
func Command[T any, P kube.Object[T]](k *kube.Options, kind, short, example string, list client.ObjectList, table Table[T]) *cobra.Command {
	var format output.Format
	var selector string
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
			// As kubectl prints them: one object when one is named, else a
			// List (kubectl apply -f takes it back; jq .items[] reads it).
			var v any = struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Items      []T    `json:"items"`
			}{"v1", "List", append([]T{}, items...)}
			if len(args) == 1 {
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
			header := table.Header
			if format == "wide" {
				header = append(append([]string(nil), header...), table.WideHeader...)
			}
			rows := make([][]string, 0, len(items))
			for i := range items {
				row := table.Row(&items[i])
				if format == "wide" {
					row = append(row, table.WideRow(&items[i])...)
				}
				rows = append(rows, row)
			}
			return output.Table(cmd.OutOrStdout(), header, rows)
		},
	}
	output.AddListFlag(cmd.Flags(), &format)
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "only objects with these labels, as kubectl takes them (app=web,tier!=db, env in (a,b))")
	return cmd
}
