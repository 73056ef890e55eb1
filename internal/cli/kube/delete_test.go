package kube

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestDeletes: names, --all or --selector — exactly one; named objects go
// without a question when nobody is there to ask (a script), and the
// command's help says how it chooses and asks.
func TestDeletes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" runs with the names given
	}{
		{[]string{"a", "b"}, ""},
		{[]string{"a", "--confirm"}, ""},
		{nil, "give the names of the things to delete, --all, or --selector: one of them"},
		{[]string{"a", "--all"}, "one of them"},
		{[]string{"--all", "-l", "team=a"}, "one of them"},
		{[]string{"a", "--selector", "team=a"}, "one of them"},
	} {
		var ran []string
		cmd := Deletes(&cobra.Command{Use: "delete NAME...", Long: "Deletes.", RunE: func(_ *cobra.Command, args []string) error { ran = args; return nil }},
			&Options{}, "thing", &salvorv1.BackupList{}, "Delete thing %s?")
		cmd.SetIn(strings.NewReader("n\n"))
		var out strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(tc.args)
		err := cmd.Execute()
		if tc.want == "" {
			names := slices.DeleteFunc(slices.Clone(tc.args), func(a string) bool { return strings.HasPrefix(a, "-") })
			if err != nil || !slices.Equal(ran, names) || strings.Contains(out.String(), "[y/N]") {
				t.Errorf("%v: ran with %v, err %v, printed %q", tc.args, ran, err, out.String())
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.want) || ran != nil {
			t.Errorf("%v: err %v (want %q), ran with %v", tc.args, err, tc.want, ran)
		}
	}
	cmd := Deletes(&cobra.Command{Use: "delete NAME...", Long: "Deletes."}, &Options{}, "thing", &salvorv1.BackupList{}, "Delete thing %s?")
	if !strings.Contains(cmd.Long, "--confirm (Velero's flag) does not ask") || !strings.Contains(cmd.Long, "must give --confirm with --all or --selector") {
		t.Errorf("help: %q", cmd.Long)
	}
	for _, flag := range []string{"confirm", "all", "selector"} {
		if cmd.Flags().Lookup(flag) == nil {
			t.Errorf("no --%s", flag)
		}
	}
}

func TestShortList(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	if got := shortList(names); got != "a, b, c, d, e, f, g, h, i, j and 2 more" {
		t.Errorf("shortList: %q", got)
	}
	if got := shortList(names[:2]); got != "a, b" {
		t.Errorf("shortList: %q", got)
	}
}

// TestChooses: a command acting on names takes --all or --selector
// instead (one of the three), its help and errors naming its own verb.
func TestChooses(t *testing.T) {
	var ran []string
	cmd := Chooses(&cobra.Command{Use: "pause NAME...", RunE: func(_ *cobra.Command, args []string) error { ran = args; return nil }},
		&Options{}, "schedule", &salvorv1.ScheduleList{}, nil)
	if cmd.Use != "pause [NAME...] [--all | --selector SELECTOR]" || cmd.Flags().Lookup("all").Usage != "pause every schedule in Salvor's namespace" {
		t.Errorf("use %q, --all %q", cmd.Use, cmd.Flags().Lookup("all").Usage)
	}
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	cmd.SetArgs([]string{"a", "b"})
	if err := cmd.Execute(); err != nil || !slices.Equal(ran, []string{"a", "b"}) {
		t.Errorf("pause a b: ran %v, %v", ran, err)
	}
	ran = nil
	cmd.SetArgs([]string{})
	if err := cmd.Execute(); err == nil || err.Error() != "give the names of the schedules to pause, --all, or --selector: one of them" || ran != nil {
		t.Errorf("pause with nothing: %v, ran %v", err, ran)
	}
}
