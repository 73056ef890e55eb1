package output

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// Format is the -o flag's value.
type Format string

// AddFlag binds -o/--output.
func AddFlag(fs *pflag.FlagSet, f *Format) {
	*f = "table"
	fs.StringVarP((*string)(f), "output", "o", "table", "output format: table, json or yaml")
}

// AddListFlag binds -o/--output for a list: kubectl's wide and name too.
func AddListFlag(fs *pflag.FlagSet, f *Format) {
	*f = "table"
	fs.StringVarP((*string)(f), "output", "o", "table", "output format: table, wide (more columns), name (kind/name per line), json or yaml")
}

// Validate checks the -o value.
func (f Format) Validate() error {
	switch f {
	case "table", "json", "yaml":
		return nil
	}
	return fmt.Errorf("--output %q: must be table, json or yaml", string(f))
}

// ValidateList checks the -o value of a list.
func (f Format) ValidateList() error {
	switch f {
	case "table", "wide", "name", "json", "yaml":
		return nil
	}
	return fmt.Errorf("--output %q: must be table, wide, name, json or yaml", string(f))
}

// Structured prints v as JSON or YAML; it returns false for table output.
func (f Format) Structured(w io.Writer, v any) (bool, error) {
	switch f {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return true, enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = w.Write(b)
		return true, err
	}
	return false, nil
}

// Table writes rows under a header, aligned.
func Table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, h := range header {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, h)
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		for i, c := range r {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
