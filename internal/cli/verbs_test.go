package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func flagNames(c *cobra.Command) []string {
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name+"/"+f.Shorthand) })
	slices.Sort(names)
	return names
}

// TestVerbFirstIsTheNounsOwnCommand: `salvor get backups` is `salvor backup
// get` — same flags, same arguments — for every verb and noun, and Velero's
// spellings (plural nouns, bsl/vsl) find it.
func TestVerbFirstIsTheNounsOwnCommand(t *testing.T) {
	root := NewRootCommand()
	want := map[string][]string{
		"create":   {"backup", "backup-location", "restore", "schedule", "snapshot-location"},
		"get":      {"backup", "backup-location", "plugin", "restore", "schedule", "snapshot-location"},
		"describe": {"backup", "restore", "schedule"},
		"delete":   {"backup", "backup-location", "restore", "schedule", "snapshot-location"},
	}
	for verb, nouns := range want {
		v, _, err := root.Find([]string{verb})
		if err != nil || v.Name() != verb {
			t.Fatalf("salvor %s: %v", verb, err)
		}
		var got []string
		for _, sub := range v.Commands() {
			got = append(got, sub.Name())
		}
		slices.Sort(got)
		if !slices.Equal(got, nouns) {
			t.Errorf("salvor %s has %v, want %v", verb, got, nouns)
		}
		for _, noun := range nouns {
			first, _, err := root.Find([]string{verb, noun})
			if err != nil {
				t.Fatalf("salvor %s %s: %v", verb, noun, err)
			}
			second, _, err := root.Find([]string{noun, verb})
			if err != nil {
				t.Fatalf("salvor %s %s: %v", noun, verb, err)
			}
			if first == second {
				t.Fatalf("salvor %s %s is the same cobra command as salvor %s %s (one parent each)", verb, noun, noun, verb)
			}
			if a, b := flagNames(first), flagNames(second); !slices.Equal(a, b) {
				t.Errorf("salvor %s %s flags %v, salvor %s %s flags %v", verb, noun, a, noun, verb, b)
			}
			_, args, _ := strings.Cut(second.Use, " ")
			if want := strings.TrimSpace(noun + " " + args); first.Use != want {
				t.Errorf("salvor %s: Use %q, want %q", verb, first.Use, want)
			}
			if strings.Contains(first.Example, "salvor "+noun+" "+verb) {
				t.Errorf("salvor %s %s: example still in the other order: %s", verb, noun, first.Example)
			}
		}
	}
	for _, args := range [][]string{
		{"get", "backups"}, {"get", "restores", "-o", "json"}, {"get", "backup-locations"}, {"get", "bsl"},
		{"get", "snapshot-locations"}, {"get", "vsl"}, {"get", "plugins", "-o", "json"}, {"get", "schedules", "-l", "team=a"},
		{"create", "backup", "b1", "--include-namespaces", "app", "--wait"},
		{"create", "restore", "--from-backup", "b1"}, {"create", "schedule", "s1", "--schedule", "@daily"},
		{"describe", "backups", "b1", "--details"}, {"delete", "backups", "b1", "b2", "--confirm"},
		{"delete", "schedule", "s1", "--confirm"},
	} {
		cmd, rest, err := NewRootCommand().Find(args)
		if err != nil {
			t.Errorf("salvor %s: %v", strings.Join(args, " "), err)
			continue
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("salvor %s: %v", strings.Join(args, " "), err)
			continue
		}
		if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
			t.Errorf("salvor %s: %v", strings.Join(args, " "), err)
		}
	}
}
