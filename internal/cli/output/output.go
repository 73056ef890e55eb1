package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
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

// Table writes rows under a header, aligned. Every table the CLI prints
// goes through it (IndentedTable for those inside a describe): a cell is
// kept to its line — a multi-line message or a tab would break the rows
// after it — by joining its lines with "; ".
func Table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range append([][]string{header}, rows...) {
		for i, c := range r {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, cell(c))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// IndentedTable writes a table with each line, header and rows alike,
// indent in: the header stays over its columns.
func IndentedTable(w io.Writer, indent string, header []string, rows [][]string) error {
	var buf bytes.Buffer
	if err := Table(&buf, header, rows); err != nil {
		return err
	}
	for _, l := range strings.SplitAfter(buf.String(), "\n") {
		if l != "" {
			if _, err := fmt.Fprint(w, indent+l); err != nil {
				return err
			}
		}
	}
	return nil
}

// cell is s on one line, without tabs.
func cell(s string) string {
	if !strings.ContainsAny(s, "\n\r\t") {
		return s
	}
	var lines []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(strings.ReplaceAll(l, "\t", " ")); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}
