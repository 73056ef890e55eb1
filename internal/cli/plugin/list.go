package plugin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/cli/output"
	"github.com/salvor-dev/salvor/internal/plugin/host"
)

type listOptions struct {
	pluginDir      string
	output         output.Format
	timeout        time.Duration
	includeBuiltin bool
}

// Builtin is how to start the salvor binary's own plugins; tests point it at
// a built salvor binary.
var Builtin = func() (host.Command, error) {
	self, err := os.Executable()
	return host.Command{Path: self, Args: []string{"run-plugins"}}, err
}

func newListCommand() *cobra.Command {
	o := &listOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the plugins the binaries under a directory serve",
		Long: `Starts every executable under --plugin-dir, asks it which plugins it serves
and prints their kind, name and binary, after the plugins built into salvor
itself. Two binaries serving the same kind and name, or a name that is not
"<domain>/<name>", is an error naming the binaries.`,
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
	output.AddFlag(cmd.Flags(), &o.output)
	cmd.Flags().DurationVar(&o.timeout, "timeout", time.Minute, "how long to wait for the binaries to answer")
	cmd.Flags().BoolVar(&o.includeBuiltin, "include-builtin", true, "also list the plugins built into salvor (salvor.dev/...)")
	_ = cmd.MarkFlagRequired("plugin-dir")
	return cmd
}

func (o *listOptions) validate() error {
	if info, err := os.Stat(o.pluginDir); err != nil {
		return fmt.Errorf("--plugin-dir: %w", err)
	} else if !info.IsDir() {
		return fmt.Errorf("--plugin-dir %s is not a directory", o.pluginDir)
	}
	return o.output.Validate()
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
	if o.includeBuiltin {
		self, err := Builtin()
		if err != nil {
			return fmt.Errorf("finding the salvor binary for its built-in plugins: %w", err)
		}
		if err := m.Add(ctx, self); err != nil {
			return err
		}
	}
	if err := m.Discover(ctx, o.pluginDir); err != nil {
		return err
	}
	plugins := m.List()
	if plugins == nil {
		plugins = []host.Plugin{}
	}
	if done, err := o.output.Structured(out, plugins); done {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tBINARY")
	for _, p := range plugins {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Kind, p.Name, p.Binary)
	}
	return tw.Flush()
}
