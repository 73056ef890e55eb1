package veleroflag

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Flag is a flag of Velero's CLI for a field Salvor's spec has not.
// Given, the field goes into the spec as Velero writes it, and the server
// judges it as it judges a Velero object applied as YAML: one that would
// change what is selected or made fails validation saying what to use
// instead; the others are kept and listed in status.ignoredFields. A
// Velero script runs, and nothing it asks for is dropped unsaid.
type Flag struct {
	Name  string
	Path  []string // under the spec (a Schedule's: spec.template)
	Usage string
	Value func(string) (any, error)
	Bool  bool // may be given bare (--flag for --flag=true)
}

// Add binds flags.
func Add(f *pflag.FlagSet, flags []Flag) {
	for _, v := range flags {
		f.String(v.Name, "", v.Usage)
		if v.Bool {
			f.Lookup(v.Name).NoOptDefVal = "true"
		}
	}
}

// Given names the flags given on the command line, as --name.
func Given(f *pflag.FlagSet, flags []Flag) []string {
	var out []string
	for _, v := range flags {
		if f.Changed(v.Name) {
			out = append(out, "--"+v.Name)
		}
	}
	return out
}

// Fields are the fields the flags given set, by their dotted path under
// the spec.
func Fields(f *pflag.FlagSet, flags []Flag) (map[string]any, error) {
	out := map[string]any{}
	for _, v := range flags {
		if !f.Changed(v.Name) {
			continue
		}
		raw := f.Lookup(v.Name).Value.String()
		val, err := v.Value(raw)
		if err != nil {
			return nil, fmt.Errorf("--%s=%q: %w", v.Name, raw, err)
		}
		out[strings.Join(v.Path, ".")] = val
	}
	return out, nil
}

// The values of Velero's flags, as Velero writes them into the spec.

// Duration is a Go duration, written as metav1.Duration writes it.
func Duration(s string) (any, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, err
	}
	return d.String(), nil
}

// Bool is true or false.
func Bool(s string) (any, error) { return strconv.ParseBool(s) }

// Int is a whole number.
func Int(s string) (any, error) {
	n, err := strconv.Atoi(s)
	return int64(n), err
}

// Text is the string as given.
func Text(s string) (any, error) { return s, nil }

// List is a comma-separated list.
func List(s string) (any, error) {
	var out []any
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out, nil
}

// Selectors reads a create command's --selector and Velero's
// --or-selector ("a=b or c=d": selectors of which an item's labels must
// match one): at most one of them, as Velero takes them.
func Selectors(selector, orSelector string) (*metav1.LabelSelector, []*metav1.LabelSelector, error) {
	switch {
	case selector != "" && orSelector != "":
		return nil, nil, fmt.Errorf("--selector and --or-selector: give one (for items matching either, add the one to the other with \" or \")")
	case selector != "":
		sel, err := metav1.ParseToLabelSelector(selector)
		if err != nil {
			return nil, nil, fmt.Errorf("--selector %q: %w", selector, err)
		}
		return sel, nil, nil
	case orSelector == "":
		return nil, nil, nil
	}
	var out []*metav1.LabelSelector
	for _, part := range strings.Split(orSelector, " or ") {
		sel, err := metav1.ParseToLabelSelector(strings.TrimSpace(part))
		if err != nil {
			return nil, nil, fmt.Errorf("--or-selector %q: %w", orSelector, err)
		}
		out = append(out, sel)
	}
	return nil, out, nil
}

// OneSetting fails when a setting is given under both of its names (a
// pair: Salvor's and Velero's).
func OneSetting(f *pflag.FlagSet, pairs ...[2]string) error {
	for _, pair := range pairs {
		if f.Changed(pair[0]) && f.Changed(pair[1]) {
			return fmt.Errorf("--%s and --%s are one setting: give one", pair[0], pair[1])
		}
	}
	return nil
}
