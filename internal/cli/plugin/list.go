package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/pkg/plugin/host"
)

type listOptions struct {
	pluginDir string
	output    string
	timeout   time.Duration
}

func newListCommand() *cobra.Command {
	o := &listOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the plugins the binaries under a directory serve",
		Long: `Starts every executable under --plugin-dir, asks it which plugins it serves
and prints their kind, name and binary. Two binaries serving the same kind and
name, or a name that is not "<domain>/<name>", is an error naming the binaries.`,
		Example: `  salvor plugin list --plugin-dir /plugins
  salvor plugin list --plugin-dir ./bin/plugins -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&o.pluginDir, "plugin-dir", "", "directory holding plugin binaries (searched recursively)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	cmd.Flags().DurationVar(&o.timeout, "timeout", time.Minute, "how long to wait for the binaries to answer")
	_ = cmd.MarkFlagRequired("plugin-dir")
	return cmd
}

func (o *listOptions) validate() error {
	switch o.output {
	case "table", "json":
		return nil
	default:
		return fmt.Errorf("--output %q: must be table or json", o.output)
	}
}

func (o *listOptions) run(ctx context.Context, out, errOut io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	m := host.NewManager(host.Options{
		Logger: slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	defer m.Close()
	if err := m.Discover(ctx, o.pluginDir); err != nil {
		return err
	}
	plugins := m.List()
	if o.output == "json" {
		if plugins == nil {
			plugins = []host.Plugin{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(plugins)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tBINARY")
	for _, p := range plugins {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Kind, p.Name, p.Binary)
	}
	return tw.Flush()
}
