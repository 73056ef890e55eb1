package install

import (
	"fmt"
	"maps"
	"strings"

	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/cli/veleroflag"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// addVeleroFlags binds the flags of `velero install` that mean something
// here, under Velero's names, and refuses — saying why — those for
// machinery Salvor has not, so a Velero install script runs or stops at
// once, never half-installs.
func (o *Options) addVeleroFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringToStringVar(&o.Config, "backup-location-config", nil, "Velero's name for --config")
	f.StringToStringVar(&o.SnapshotConfig, "snapshot-location-config", nil,
		"create a default volume snapshot location on --provider with this config and the --secret-file credential (Velero's flag; implies --use-volume-snapshots)")
	useSnapshots := f.Bool("use-volume-snapshots", false, "create a default volume snapshot location on --provider (Velero's flag; Salvor's default is off: the built-in object stores snapshot nothing)")
	f.StringToStringVar(&o.SAAnnotations, "sa-annotations", nil, "annotations for the server's service account, e.g. eks.amazonaws.com/role-arn=ARN (Velero's flag)")
	f.StringToStringVar(&o.PodAnnotations, "pod-annotations", nil, "annotations for the server's pod (Velero's flag)")
	f.StringToStringVar(&o.PodLabels, "pod-labels", nil, "labels for the server's pod (Velero's flag)")
	f.BoolVar(&o.NoDefaultLocation, "no-default-backup-location", false, "create no backup storage location (Velero's flag; without --bucket none is created anyway)")
	f.BoolVar(&o.NoSecret, "no-secret", false, "create no credentials Secret (Velero's flag; without --secret-file none is created anyway)")
	f.StringVar(&o.CACertFile, "cacert", "", "a PEM file of the CA that signs the object store's certificate: the default location's caCert (Velero's flag)")
	f.BoolVar(&o.CRDsOnly, "crds-only", false, "install (or with --dry-run print) only the CRDs (Velero's flag)")
	f.StringVar(&o.PriorityClassName, "server-priority-class-name", "", "the PriorityClass of the server's pod (Velero's flag)")
	f.IntVar(&o.ConcurrentBackups, "concurrent-backups", 0, "backups the server runs at once (its --max-concurrent-backups; default 2) (Velero's flag)")
	f.BoolVar(&o.ScheduleSkip, "schedule-skip-immediately", false, "schedules that do not set spec.skipImmediately wait for their first scheduled time instead of backing up when created or unpaused (the server's flag; Velero's)")
	for velero, ours := range map[string]*string{
		"velero-pod-cpu-request": &o.CPURequest, "velero-pod-mem-request": &o.MemoryRequest,
		"velero-pod-cpu-limit": &o.CPULimit, "velero-pod-mem-limit": &o.MemoryLimit,
	} {
		f.StringVar(ours, velero, *ours, "Velero's name for --server-"+strings.TrimPrefix(strings.ReplaceAll(velero, "-mem-", "-memory-"), "velero-pod-"))
	}
	// What Salvor always does: true is taken, false refused.
	always := map[string]string{
		"apply":                               "Salvor's install always applies: what exists is updated to match",
		"csi-snapshot-early-frequent-polling": "Salvor always polls a new operation early and often (after 1s, then doubling up to the server's --item-operation-sync-frequency)",
	}
	for flag, what := range always {
		f.Bool(flag, true, what+" (Velero's flag)")
	}
	refused := veleroflag.Refuse(f, []veleroflag.Refused{
		{Why: veleroflag.NoNodeAgent, Bools: []string{"use-node-agent-windows", "privileged-node-agent", "node-agent-disable-host-path", "default-snapshot-move-data"},
			Values: []string{"node-agent-pod-cpu-request", "node-agent-pod-mem-request", "node-agent-pod-cpu-limit", "node-agent-pod-mem-limit",
				"node-agent-configmap", "node-agent-priority-class-name", "pod-volume-operation-timeout"}},
		{Why: veleroflag.NoRepositories, Values: []string{"backup-repository-configmap", "repo-maintenance-job-configmap",
			"maintenance-job-cpu-request", "maintenance-job-mem-request", "maintenance-job-cpu-limit", "maintenance-job-mem-limit"}},
		{Why: veleroflag.NoSweep, Values: []string{"garbage-collection-frequency"}},
		{Why: veleroflag.NoItemBlocks, Values: []string{"item-block-worker-count"}},
		{Why: veleroflag.NoInformer, Bools: []string{"disable-informer-cache"}},
		{Why: "Salvor has no feature flags; CSI snapshots need none (docs/volumes.md)", Values: []string{"features"}},
		{Why: veleroflag.ReadOnly, Bools: []string{"restore-only"}},
	})
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := refused(); err != nil {
			return err
		}
		for flag, what := range always {
			if on, _ := cmd.Flags().GetBool(flag); !on {
				return fmt.Errorf("--%s=false is Velero's: %s", flag, what)
			}
		}
		if err := veleroflag.OneSetting(cmd.Flags(), [2]string{"config", "backup-location-config"}, [2]string{"server-cpu-request", "velero-pod-cpu-request"},
			[2]string{"server-memory-request", "velero-pod-mem-request"}, [2]string{"server-cpu-limit", "velero-pod-cpu-limit"},
			[2]string{"server-memory-limit", "velero-pod-mem-limit"}); err != nil {
			return err
		}
		if cmd.Flags().Changed("use-volume-snapshots") {
			o.UseVolumeSnapshots = useSnapshots
		}
		return nil
	}
}

// checkVelero checks the flags that go together.
func (o *Options) checkVelero() error {
	switch {
	case o.UploaderType != "" && o.UploaderType != salvorv1.UploaderKopia:
		return fmt.Errorf("--uploader-type %q: Salvor's file-system backup is kopia's (restic's repositories are not read): leave it out", o.UploaderType)
	case o.Bucket != "" && o.Provider == "":
		return fmt.Errorf("--bucket needs --provider: the object store plugin of the default location")
	case o.Bucket != "" && o.NoDefaultLocation:
		return fmt.Errorf("--no-default-backup-location and --bucket: give one (--bucket makes the default location)")
	case o.Provider != "" && o.Bucket == "" && !o.NoDefaultLocation && !o.snapshotLocation():
		return fmt.Errorf("--provider needs --bucket for a default location (or --no-default-backup-location, or a snapshot location with --snapshot-location-config)")
	case o.Wait && o.DryRun:
		return fmt.Errorf("--wait and --dry-run: give one (a dry run applies nothing to wait for)")
	case o.ConcurrentBackups < 0:
		return fmt.Errorf("--concurrent-backups %d: must not be negative", o.ConcurrentBackups)
	case o.SecretFile != "" && o.NoSecret:
		return fmt.Errorf("--no-secret and --secret-file: give one")
	case o.CACertFile != "" && o.Bucket == "":
		return fmt.Errorf("--cacert is the default location's: give --bucket too")
	case o.UseVolumeSnapshots != nil && !*o.UseVolumeSnapshots && len(o.SnapshotConfig) > 0:
		return fmt.Errorf("--use-volume-snapshots=false and --snapshot-location-config: give one")
	case o.snapshotLocation() && o.Provider == "":
		return fmt.Errorf("a volume snapshot location (--use-volume-snapshots, --snapshot-location-config) needs --provider: its VolumeSnapshotter plugin")
	}
	for k := range o.PodLabels {
		if strings.HasPrefix(k, "app.kubernetes.io/") {
			return fmt.Errorf("--pod-labels %s: Salvor's own label (the Deployment selects its pods by it)", k)
		}
	}
	return nil
}

// snapshotLocation says whether install makes a default volume snapshot
// location: asked for, or implied by its config (as Velero's default is on).
func (o *Options) snapshotLocation() bool {
	if o.UseVolumeSnapshots != nil {
		return *o.UseVolumeSnapshots
	}
	return len(o.SnapshotConfig) > 0
}

// merged is a copy of a with b's entries over it.
func merged(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}
