package server

import (
	"strings"
	"testing"

	"github.com/salvor-dev/salvor/internal/cli/kube"
)

// TestServerFlagsChecked: a bad --log-format, --client-qps,
// --client-burst, --client-page-size or --restore-resource-priorities, one
// setting given under both its names, or a flag of Velero's server for what
// Salvor has not, stops the server before it starts, naming the flag.
func TestServerFlagsChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-format", "xml"}, `--log-format "xml": want json or text`},
		{[]string{"--client-qps", "0"}, "--client-qps 0 and --client-burst 10000: both must be positive"},
		{[]string{"--client-burst", "-1"}, "both must be positive"},
		{[]string{"--terminating-resource-timeout", "0s"}, "--terminating-resource-timeout 0s: must be positive"},
		{[]string{"--client-page-size", "-5"}, "--client-page-size -5: must not be negative"},
		{[]string{"--restore-resource-priorities", "namespaces,-,secrets,-"}, `--restore-resource-priorities: "-" divides the list once`},
		{[]string{"--concurrent-backups", "3", "--max-concurrent-backups", "4"}, "--max-concurrent-backups and --concurrent-backups are one setting: give one"},
		{[]string{"--profiler-address", ":6060", "--profiling-address", ":6061"}, "--profiling-address and --profiler-address are one setting"},
		{[]string{"--uploader-type", "restic"}, `--uploader-type "restic": Salvor's file-system backup is kopia's (restic's repositories are not read)`},
		{[]string{"--default-snapshot-move-data"}, "--default-snapshot-move-data is Velero's: set snapshotMoveData on each backup or schedule"},
		{[]string{"--restore-only"}, "--restore-only is Velero's: make the location ReadOnly instead"},
		{[]string{"--default-backup-storage-location", "aws"}, "salvor backup-location set NAME --default: leave it out"},
		{[]string{"--disable-controllers", "schedule"}, "--disable-controllers is Velero's"},
		{[]string{"--garbage-collection-frequency", "1h"}, "no periodic sweep"},
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
