package server

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/kopiarepo"
)

// TestServerFlagsChecked: a bad --log-format, --client-qps,
// --client-burst, --client-page-size, --restore-resource-priorities or
// --filesystem-location-dir, one
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
		{[]string{"--filesystem-location-dir", "backups"}, `--filesystem-location-dir "backups": want a clean absolute path of a directory other than /`},
		{[]string{"--filesystem-location-dir", "/srv/backups,/srv/../etc"}, `--filesystem-location-dir "/srv/../etc": want a clean absolute path`},
		{[]string{"--filesystem-location-dir", "/"}, `--filesystem-location-dir "/": want a clean absolute path of a directory other than /`},
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

// TestServerFlagsCompleted: what complete makes of the flags the server
// runs with.
func TestServerFlagsCompleted(t *testing.T) {
	complete := func(args ...string) *options {
		t.Helper()
		o := &options{kube: &kube.Options{}}
		f := pflag.NewFlagSet("server", pflag.ContinueOnError)
		o.bind(f)
		if err := f.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := o.complete(f); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return o
	}
	o := complete()
	if o.memoryBudget != 256<<20 || o.level != slog.LevelInfo || len(o.timeouts) != 0 || o.syncPeriod != nil {
		t.Errorf("defaults: budget %d, level %v, timeouts %v, sync period %v", o.memoryBudget, o.level, o.timeouts, o.syncPeriod)
	}
	if o.safety != kopiarepo.SafetyFull {
		t.Errorf("defaults: maintenance safety %q, want full", o.safety)
	}
	if o.moverCacheSize.String() != "1Gi" || len(o.moverTolerations) != 0 || len(o.moverResources.Requests) != 0 {
		t.Errorf("defaults: mover cache %s, tolerations %v, resources %v", &o.moverCacheSize, o.moverTolerations, o.moverResources)
	}
	o = complete("--restore-memory-budget", "1Gi", "--log-level", "debug",
		"--plugin-timeout", "BackupItemActionV2.Execute=2m,ObjectStore.PutObject=2h",
		"--backup-sync-period", "0", "--data-mover-tolerations", "dedicated=backup:NoSchedule",
		"--data-mover-memory-limit", "512Mi", "--repo-maintenance-safety", "none")
	if o.memoryBudget != 1<<30 || o.level != slog.LevelDebug || o.safety != kopiarepo.SafetyNone {
		t.Errorf("budget %d, level %v, maintenance safety %q", o.memoryBudget, o.level, o.safety)
	}
	if o.timeouts["BackupItemActionV2.Execute"] != 2*time.Minute || o.timeouts["ObjectStore.PutObject"] != 2*time.Hour || len(o.timeouts) != 2 {
		t.Errorf("plugin timeouts %v", o.timeouts)
	}
	// Given as 0, the period is set (never sync), not left to each check.
	if o.syncPeriod == nil || o.syncPeriod.Duration != 0 {
		t.Errorf("--backup-sync-period 0: %v", o.syncPeriod)
	}
	if len(o.moverTolerations) != 1 || o.moverTolerations[0].Key != "dedicated" || o.moverTolerations[0].Value != "backup" || o.moverTolerations[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("tolerations %v", o.moverTolerations)
	}
	if l := o.moverResources.Limits[corev1.ResourceMemory]; l.String() != "512Mi" {
		t.Errorf("memory limit %s", &l)
	}
}
