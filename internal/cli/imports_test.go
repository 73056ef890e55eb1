package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCommandsDoNotImportTheServer keeps the CLI light and portable: only
// the commands that run the server or the plugins may link a controller or
// an engine; every other command talks to the API server, never to the
// server's code.
func TestCommandsDoNotImportTheServer(t *testing.T) {
	const module = "github.com/salvor-dev/salvor/"
	allowed := map[string]bool{
		module + "internal/cli":            true, // the root wires every command
		module + "internal/cli/server":     true,
		module + "internal/cli/runplugins": true,
	}
	forbidden := []string{"internal/controller", "internal/backup", "internal/restore", "internal/operations", "internal/persistence"}

	out, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, pkg := range strings.Fields(string(out)) {
		if allowed[pkg] {
			continue
		}
		deps, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		checked++
		for _, dep := range strings.Fields(string(deps)) {
			for _, f := range forbidden {
				if dep == module+f {
					t.Errorf("%s imports %s (directly or through another package)", pkg, dep)
				}
			}
		}
	}
	if checked < 8 {
		t.Fatalf("checked only %d command packages; the package list is wrong", checked)
	}
}
