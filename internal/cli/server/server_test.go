package server

import (
	"strings"
	"testing"

	"github.com/salvor-dev/salvor/internal/cli/kube"
)

// TestServerFlagsChecked: a bad --log-format, --client-qps or
// --client-burst stops the server before it starts, naming the flag.
func TestServerFlagsChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-format", "xml"}, `--log-format "xml": want json or text`},
		{[]string{"--client-qps", "0"}, "--client-qps 0 and --client-burst 10000: both must be positive"},
		{[]string{"--client-burst", "-1"}, "both must be positive"},
	} {
		cmd := NewCommand(&kube.Options{})
		cmd.SetArgs(tc.args)
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("salvor server %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
