package kube

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestDescribes: names are described one by one in the order given; names
// and --selector do not go together; a structured -o takes one name.
func TestDescribes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" runs once per name
	}{
		{[]string{"a"}, ""},
		{[]string{"b", "a", "c"}, ""},
		{[]string{"a", "-o", "yaml"}, ""},
		{[]string{"a", "-l", "team=x"}, "give names or --selector, not both"},
		{[]string{"a", "b", "-o", "json"}, "-o json describes one thing: give its name (salvor thing get -o json lists them all)"},
		{[]string{"-o", "yaml"}, "-o yaml describes one thing"},
	} {
		var ran []string
		var format output.Format
		inner := &cobra.Command{Use: "describe NAME", RunE: func(_ *cobra.Command, args []string) error { ran = append(ran, args...); return nil }}
		output.AddFlag(inner.Flags(), &format)
		cmd := Describes(inner, &Options{}, "thing", &salvorv1.BackupList{})
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		cmd.SetArgs(tc.args)
		err := cmd.Execute()
		if tc.want == "" {
			names := slices.DeleteFunc(slices.Clone(tc.args), func(a string) bool { return a == "-o" || a == "yaml" })
			if err != nil || !slices.Equal(ran, names) {
				t.Errorf("%v: described %v (%v)", tc.args, ran, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.want) || ran != nil {
			t.Errorf("%v: err %v (want %q), described %v", tc.args, err, tc.want, ran)
		}
	}
}
