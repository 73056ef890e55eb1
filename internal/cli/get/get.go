package get

import (
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
)

// Table is how a kind is listed: a header and a row per object.
type Table[T any] struct {
	Header []string
	Row    func(*T) []string
}

// Command returns `get [NAME...]` for a kind; list is an empty list of it.
func Command[T any, P kube.Object[T]](k *kube.Options, kind, short, example string, list client.ObjectList, table Table[T]) *cobra.Command {
	var format output.Format
	cmd := &cobra.Command{
		Use:     "get [NAME...]",
		Short:   short,
		Example: example,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Validate(); err != nil {
				return err
			}
			c, err := k.Client()
			if err != nil {
				return err
			}
			items, err := kube.Fetch[T, P](cmd.Context(), c, k.Namespace, kind, args, list)
			if err != nil {
				return err
			}
			var v any = items
			if len(args) == 1 {
				v = items[0]
			}
			if done, err := format.Structured(cmd.OutOrStdout(), v); done {
				return err
			}
			rows := make([][]string, 0, len(items))
			for i := range items {
				rows = append(rows, table.Row(&items[i]))
			}
			return output.Table(cmd.OutOrStdout(), table.Header, rows)
		},
	}
	output.AddFlag(cmd.Flags(), &format)
	return cmd
}
