package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestCommandLinesItDoesNotUnderstandAreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"bakup"}, true, "Did you mean this?\n\tbackup"},
		{[]string{"backup", "crate", "x"}, true, "unknown command \"crate\" for \"salvor backup\"\n\nDid you mean this?\n\tcreate"},
		{[]string{"schedule", "frobnicate"}, true, "unknown command \"frobnicate\" for \"salvor schedule\""},
		{[]string{"backup", "get", "--nope"}, true, "unknown flag: --nope"},
		{[]string{"backup", "create"}, true, "salvor backup create: name the backup (salvor backup create NAME), or give --from-schedule SCHEDULE"},
		{[]string{"backup", "create", "a", "b"}, true, "salvor backup create: accepts at most 1 arg(s), received 2"},
		{[]string{"backup", "create", "b", "--snapshot-volumes", "false"}, true, "A flag's true or false goes after '=', as in --flag=false"},
		{[]string{"version", "extra"}, true, "unknown command \"extra\" for \"salvor version\""},
		{[]string{"backup"}, false, ""},
		{[]string{"version", "--client-only"}, false, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := NewRootCommand()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(tc.args)
			err := root.Execute()
			var usage *UsageError
			if got := errors.As(err, &usage); got != tc.usage {
				t.Fatalf("usage error: %v, want %v (%v)", got, tc.usage, err)
			}
			if tc.usage && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
			if !tc.usage && err != nil {
				t.Errorf("error %v", err)
			}
		})
	}
}
