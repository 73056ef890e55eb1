package output

import (
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HookSelection says which pods a backup's or restore's resource hook
// selects, as a line of describe.
func HookSelection(name string, namespaces, excludedNamespaces, resources, excludedResources []string, labels *metav1.LabelSelector) string {
	var sel []string
	for _, f := range []struct {
		name string
		list []string
	}{{"namespaces", namespaces}, {"excluded namespaces", excludedNamespaces},
		{"resources", resources}, {"excluded resources", excludedResources}} {
		if len(f.list) > 0 {
			sel = append(sel, f.name+" "+strings.Join(f.list, ","))
		}
	}
	if labels != nil {
		sel = append(sel, "labels "+metav1.FormatLabelSelector(labels))
	}
	if len(sel) == 0 {
		sel = []string{"every pod"}
	}
	return fmt.Sprintf("Hook %s: %s\n", name, strings.Join(sel, "; "))
}

// HookCommand writes one exec hook's line of describe: when it runs, in
// which container, the command, and the settings given (extra: more of
// them, already worded).
func HookCommand(w io.Writer, when, container string, command []string, onError string, timeout time.Duration, extra ...string) {
	if container == "" {
		container = "(first container)"
	}
	fmt.Fprintf(w, "  %-4s %s: %q", when, container, command)
	if onError != "" {
		fmt.Fprintf(w, ", onError %s", onError)
	}
	if timeout > 0 {
		fmt.Fprintf(w, ", timeout %s", timeout)
	}
	for _, e := range extra {
		fmt.Fprintf(w, ", %s", e)
	}
	fmt.Fprintln(w)
}
