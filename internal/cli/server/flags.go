package server

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/veleroflag"
	"github.com/salvor-dev/salvor/internal/datamover"
	"github.com/salvor-dev/salvor/internal/hooks"
	"github.com/salvor-dev/salvor/internal/kopiarepo"
	"github.com/salvor-dev/salvor/internal/restore"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/objectstore/filesystem"
)

// options are `salvor server`'s flags, and what complete makes of them.
type options struct {
	kube                 *kube.Options
	globalPolicies       string
	pluginDir            string
	metricsAddress       string
	metricsSecure        bool
	healthAddress        string
	profilingAddress     string
	leaderElect          bool
	workers              int
	maxConcurrentBackups int
	logFormat            string
	clientQPS            float32
	clientBurst          int
	scheduleSkip         bool
	backupSyncPeriod     time.Duration
	syncPeriod           *metav1.Duration // --backup-sync-period when given
	locationInterval     time.Duration
	defaultTTL           time.Duration
	pluginGrace          time.Duration
	pluginTimeouts       map[string]string
	logLevel             string
	operationSync        time.Duration
	readyTimeout         time.Duration
	restoreWorkers       int
	restoreTiers         []string
	operationTimeout     time.Duration
	defaultFSBackup      bool
	tenants              bool
	confineFilesystem    bool
	filesystemDirs       []string
	uploaderType         string
	restoreMemory        string
	finalizeAttempts     int
	finalizeBackoff      time.Duration
	pageSize             int64
	terminatingTimeout   time.Duration
	hookWait             time.Duration
	moverImage           string
	moverAccount         string
	moverConcurrency     int
	moverPerNode         int
	moverNodeSelector    map[string]string
	moverCache           string
	moverCacheSize       resource.Quantity
	moverTolerationFlags []string
	moverTolerations     []corev1.Toleration
	moverRequests        [4]string // CPU and memory requests, then limits
	moverResources       corev1.ResourceRequirements
	repoMaintain         time.Duration
	keepMaintenanceJobs  int
	repoSafety           string
	safety               kopiarepo.Safety // --repo-maintenance-safety, parsed

	refused func() error // Velero's flags for what Salvor has not
	// made by complete
	level        slog.Level
	memoryBudget int64
	timeouts     map[string]time.Duration // --plugin-timeout
}

// bind declares the server's flags on f.
func (o *options) bind(f *pflag.FlagSet) {
	f.StringVar(&o.pluginDir, "plugin-dir", "", "directory of plugin binaries (searched recursively); empty for built-in plugins only")
	f.StringVar(&o.metricsAddress, "metrics-address", ":8085", `address of the Prometheus endpoint (/metrics); "0" turns it off`)
	f.BoolVar(&o.metricsSecure, "metrics-secure", true, "serve /metrics over HTTPS to callers the API server authenticates and authorizes (get on the non-resource URL /metrics, as the salvor-metrics-reader ClusterRole grants); false serves plain HTTP to anyone")
	f.StringVar(&o.healthAddress, "health-address", ":8086", `address of the health probes (/healthz, /readyz); "0" turns them off`)
	f.StringVar(&o.profilingAddress, "profiling-address", "", `address of Go's profiling endpoints (/debug/pprof/), e.g. localhost:6060; off when empty`)
	f.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader among server replicas (run several replicas with it on)")
	f.IntVar(&o.workers, "workers", 0, "items processed at once per backup (default: 8 per CPU; plugin calls wait on other processes, not on this CPU)")
	f.IntVar(&o.maxConcurrentBackups, "max-concurrent-backups", 2, "backups run at once (and restores)")
	f.IntVar(&o.maxConcurrentBackups, "concurrent-backups", 2, "Velero's name for --max-concurrent-backups")
	f.StringVar(&o.profilingAddress, "profiler-address", "", "Velero's name for --profiling-address")
	f.Int64Var(&o.pageSize, "client-page-size", 500, "objects a backup lists per request; 0 lists each resource of a namespace in one request (Velero's flag)")
	f.StringVar(&o.logFormat, "log-format", "json", "the log's format: json (one object a line) or text (key=value) (Velero's flag)")
	f.Float32Var(&o.clientQPS, "client-qps", 5000, "requests a second to the API server, past the burst (Velero's flag; high by default, as a restore creates items as fast as the API server takes them)")
	f.IntVar(&o.clientBurst, "client-burst", 10000, "requests to the API server at once before --client-qps applies (Velero's flag)")
	f.BoolVar(&o.scheduleSkip, "schedule-skip-immediately", false, "schedules that do not set spec.skipImmediately wait for their first scheduled time instead of backing up when created or unpaused (Velero's flag)")
	f.DurationVar(&o.locationInterval, "location-check-interval", time.Minute, "how often locations are checked (and synced) when they set no validationFrequency")
	f.DurationVar(&o.locationInterval, "store-validation-frequency", time.Minute, "Velero's name for --location-check-interval")
	f.DurationVar(&o.backupSyncPeriod, "backup-sync-period", 0, "how often locations that set no backupSyncPeriod are synced; 0 never syncs them (Velero's flag; without it, at every check)")
	f.DurationVar(&o.defaultTTL, "default-backup-ttl", 720*time.Hour, "how long backups without a ttl are kept")
	f.DurationVar(&o.pluginGrace, "plugin-grace-period", 10*time.Second, "how long past its deadline a plugin call may run before the plugin is killed")
	f.StringToStringVar(&o.pluginTimeouts, "plugin-timeout", nil, `per-call plugin deadlines, e.g. BackupItemActionV2.Execute=2m,ObjectStore.PutObject=2h`)
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.DurationVar(&o.readyTimeout, "additional-items-ready-timeout", 10*time.Minute, "how long a restore waits for a plugin's additional items to be ready when the plugin names no timeout")
	f.StringSliceVar(&o.restoreTiers, "restore-resource-priorities", nil, `the order resources are restored in, by any name kubectl takes (customresourcedefinitions, namespaces, deploy, ...); as in Velero, those after a "-" are restored after every resource the list leaves out, e.g. customresourcedefinitions,namespaces,secrets,-,clusters.cluster.x-k8s.io (default: Salvor's list; admission webhooks and APIServices come last unless listed)`)
	f.DurationVar(&o.terminatingTimeout, "terminating-resource-timeout", restore.DefaultTerminatingTimeout, "how long a restore waits for what it restores that is being deleted — a namespace it restores into, a claim in use, any item a finalizer holds (not a persistent volume) — to go, to make it anew; a restore's waits end together (Velero's flag)")
	f.DurationVar(&o.hookWait, "restore-hook-wait-timeout", hooks.DefaultWait, "how long a restore waits for a restored pod's container to be up to run its exec hooks when the hooks give no waitTimeout (post.hook.restore.velero.io/wait-timeout); the restore ends when every such wait has")
	f.IntVar(&o.restoreWorkers, "restore-workers", 0, "items created at once per restore tier (default: 32 per CPU)")
	f.StringVar(&o.restoreMemory, "restore-memory-budget", "256Mi", "bytes of items a restore holds in flight at once (an item costs about five times its size); items wait for budget, so large items cannot exhaust memory")
	f.StringVar(&o.moverImage, "data-mover-image", "ghcr.io/salvor-dev/salvor:latest", "the image of the pods that move volume data (backups with snapshotMoveData): Salvor's own, whose entrypoint is salvor")
	f.StringVar(&o.moverAccount, "data-mover-service-account", "salvor-data-mover", "the ServiceAccount mover pods run as (salvor install makes it, with only what movers use)")
	f.IntVar(&o.moverConcurrency, "data-mover-concurrency", 4, "volume uploads that run at once across the cluster's nodes, and as many downloads")
	f.IntVar(&o.moverPerNode, "data-mover-concurrency-per-node", 0, "mover pods (uploads and downloads) that run at once on one node; 0: no limit but --data-mover-concurrency")
	f.StringToStringVar(&o.moverNodeSelector, "data-mover-node-selector", nil, "labels of the nodes mover pods may run on, e.g. kubernetes.io/os=linux")
	f.StringVar(&o.moverCache, "data-mover-cache-size", "1Gi", "the size of a mover pod's emptyDir for kopia's caches")
	f.StringSliceVar(&o.moverTolerationFlags, "data-mover-tolerations", nil, "taints mover pods tolerate, KEY[=VALUE][:EFFECT], comma-separated or repeated (without a value: any; without an effect: every effect)")
	f.StringVar(&o.moverRequests[0], "data-mover-cpu-request", "", "mover pods' CPU request (empty for none)")
	f.StringVar(&o.moverRequests[1], "data-mover-memory-request", "", "mover pods' memory request (empty for none)")
	f.StringVar(&o.moverRequests[2], "data-mover-cpu-limit", "", "mover pods' CPU limit (empty for none)")
	f.StringVar(&o.moverRequests[3], "data-mover-memory-limit", "", "mover pods' memory limit (empty for none)")
	f.DurationVar(&o.repoMaintain, "default-repo-maintain-frequency", datamover.DefaultMaintainFrequency, "how often kopia's maintenance runs, as a Job, on each repository of moved volume data it makes (Velero's flag; a BackupRepository's spec.maintenanceFrequency changes it for one)")
	f.IntVar(&o.keepMaintenanceJobs, "keep-latest-maintenance-jobs", datamover.DefaultKeepJobs, "finished maintenance Jobs kept for each repository (Velero's flag)")
	f.StringVar(&o.repoSafety, "repo-maintenance-safety", string(kopiarepo.SafetyFull), "full: kopia's safety margins (a deleted backup's volume data is freed a day or more later; uploads run beside maintenance); none: freed at the next maintenance runs, with uploads and downloads of a repository kept apart from its maintenance")
	f.StringVar(&o.uploaderType, "uploader-type", salvorv1.UploaderKopia, "the file-system backup's uploader: kopia, the only one (Velero's flag)")
	f.BoolVar(&o.defaultFSBackup, "default-volumes-to-fs-backup", false, "copy the files of every volume of a backup's running pods (file-system backup, by the node agent) when the backup does not say (Velero's flag; a pod opts volumes out with backup.velero.io/backup-volumes-excludes)")
	f.BoolVar(&o.confineFilesystem, "confine-filesystem-locations", false, "refuse filesystem locations (salvor.dev/filesystem) whose root is not in a --filesystem-location-dir: a server in a pod, whose own disk goes with the pod (salvor install sets it); without it a root may be anywhere on the server's machine")
	f.StringSliceVar(&o.filesystemDirs, "filesystem-location-dir", nil, "a directory the server's pod mounts from the node (salvor install --filesystem-location-dir) in which filesystem locations may keep backups; comma-separated or repeated; confines them as --confine-filesystem-locations does")
	f.BoolVar(&o.tenants, "tenants", false, "also run the Backups, Restores and DownloadRequests teams make in their own namespaces, confined to them and checked against their makers' rights (docs/self-service.md); needs what salvor install --tenants installs")
	f.DurationVar(&o.operationSync, "item-operation-sync-frequency", 10*time.Second, "longest interval between two Progress polls of an operation (the first come sooner)")
	f.DurationVar(&o.operationTimeout, "default-item-operation-timeout", 4*time.Hour, "bound on each plugin operation of backups without itemOperationTimeout")
	f.IntVar(&o.finalizeAttempts, "finalize-attempts", 8, "how often finalizing a backup (after its plugin operations) is tried before the backup is recorded as its first pass made it; also how often a restore's files are read or written around its plugin operations before it ends without them")
	f.DurationVar(&o.finalizeBackoff, "finalize-backoff", 2*time.Second, "delay after a failed finalisation, doubled after each failure up to a minute")
	f.StringVar(&o.globalPolicies, "global-backup-volume-policies-configmap", "", "a ConfigMap in the server's namespace holding volume policies (Velero's resource policies format) that follow every backup's own; checked at start, the server does not start with it missing or wrong (Velero's flag)")
	o.refused = veleroflag.Refuse(f, []veleroflag.Refused{
		{Why: "set snapshotMoveData on each backup or schedule (salvor backup create --snapshot-move-data)", Bools: []string{"default-snapshot-move-data"}},
		{Why: "each pod volume's backup is bounded by its backup's itemOperationTimeout (--default-item-operation-timeout)", Values: []string{"fs-backup-timeout"}},
		{Why: veleroflag.NoRepositories, Values: []string{"backup-repository-configmap", "repo-maintenance-job-configmap"}},
		{Why: veleroflag.NoSweep, Values: []string{"garbage-collection-frequency"}},
		{Why: veleroflag.NoItemBlocks, Values: []string{"item-block-worker-count"}},
		{Why: veleroflag.NoInformer, Bools: []string{"disable-informer-cache"}},
		{Why: veleroflag.ReadOnly, Bools: []string{"restore-only"}},
		{Why: "a backup without a location goes to the location marked default: salvor backup-location set NAME --default", Values: []string{"default-backup-storage-location"}},
		{Why: "a backup snapshots through the snapshot locations marked default: salvor snapshot-location set NAME --default", Values: []string{"default-volume-snapshot-locations"}},
		{Why: "Salvor's controllers run together (a ReadOnly location takes no backups; a paused schedule makes none)", Values: []string{"disable-controllers"}},
		{Why: "Salvor has no volume group snapshots", Values: []string{"volume-group-snapshot-label-key"}},
		{Why: "each of Salvor's waits has a flag of its own (--additional-items-ready-timeout, --default-item-operation-timeout, --plugin-timeout)", Values: []string{"resource-timeout"}},
		{Why: "Salvor's requests to the API server are bounded by --client-qps and --client-burst", Values: []string{"max-concurrent-k8s-connections"}},
	})
}

// complete judges the flags before the server connects to anything —
// each refusal names its flag — and parses those that are more than a
// plain value. f tells which flags were given.
func (o *options) complete(f *pflag.FlagSet) error {
	if err := o.refused(); err != nil {
		return err
	}
	if err := veleroflag.OneSetting(f, [2]string{"location-check-interval", "store-validation-frequency"},
		[2]string{"max-concurrent-backups", "concurrent-backups"}, [2]string{"profiling-address", "profiler-address"}); err != nil {
		return err
	}
	if err := restore.CheckTiers(o.restoreTiers); err != nil {
		return fmt.Errorf("--restore-resource-priorities: %w", err)
	}
	if o.terminatingTimeout <= 0 {
		return fmt.Errorf("--terminating-resource-timeout %s: must be positive", o.terminatingTimeout)
	}
	if o.hookWait <= 0 {
		return fmt.Errorf("--restore-hook-wait-timeout %s: must be positive", o.hookWait)
	}
	if o.moverConcurrency <= 0 {
		return fmt.Errorf("--data-mover-concurrency %d: must be positive", o.moverConcurrency)
	}
	if o.moverPerNode < 0 {
		return fmt.Errorf("--data-mover-concurrency-per-node %d: must not be negative (0: no limit per node)", o.moverPerNode)
	}
	q, err := resource.ParseQuantity(o.moverCache)
	if err != nil || q.Sign() <= 0 {
		return fmt.Errorf("--data-mover-cache-size %q: want a size such as 1Gi", o.moverCache)
	}
	o.moverCacheSize = q
	for _, t := range o.moverTolerationFlags {
		tol, err := datamover.ParseToleration(t)
		if err != nil {
			return fmt.Errorf("--data-mover-tolerations: %w", err)
		}
		o.moverTolerations = append(o.moverTolerations, tol)
	}
	if o.moverResources, err = datamover.ParseResources(o.moverRequests[0], o.moverRequests[1], o.moverRequests[2], o.moverRequests[3]); err != nil {
		return err
	}
	if o.repoMaintain <= 0 {
		return fmt.Errorf("--default-repo-maintain-frequency %s: must be positive", o.repoMaintain)
	}
	if o.keepMaintenanceJobs <= 0 {
		return fmt.Errorf("--keep-latest-maintenance-jobs %d: must be positive", o.keepMaintenanceJobs)
	}
	if o.safety, err = kopiarepo.ParseSafety(o.repoSafety); err != nil {
		return fmt.Errorf("--repo-maintenance-safety: %w", err)
	}
	if o.pageSize < 0 {
		return fmt.Errorf("--client-page-size %d: must not be negative (0 lists without pages)", o.pageSize)
	}
	for _, d := range o.filesystemDirs {
		if err := filesystem.CheckConfinedDir(d); err != nil {
			return fmt.Errorf("--filesystem-location-dir %q: %w", d, err)
		}
	}
	if o.locationInterval <= 0 {
		return fmt.Errorf("--location-check-interval %s: must be positive", o.locationInterval)
	}
	if f.Changed("backup-sync-period") {
		if o.backupSyncPeriod < 0 {
			return fmt.Errorf("--backup-sync-period %s: must not be negative", o.backupSyncPeriod)
		}
		o.syncPeriod = &metav1.Duration{Duration: o.backupSyncPeriod}
	}
	if err := o.level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", o.logLevel)
	}
	if o.logFormat != "json" && o.logFormat != "text" {
		return fmt.Errorf("--log-format %q: want json or text", o.logFormat)
	}
	if o.uploaderType != salvorv1.UploaderKopia {
		return fmt.Errorf("--uploader-type %q: Salvor's file-system backup is kopia's (restic's repositories are not read): leave it out", o.uploaderType)
	}
	budget, err := resource.ParseQuantity(o.restoreMemory)
	if err != nil || budget.Value() <= 0 {
		return fmt.Errorf("--restore-memory-budget %q: want a size such as 256Mi or 1Gi", o.restoreMemory)
	}
	o.memoryBudget = budget.Value()
	if o.clientQPS <= 0 || o.clientBurst <= 0 {
		return fmt.Errorf("--client-qps %v and --client-burst %d: both must be positive", o.clientQPS, o.clientBurst)
	}
	o.timeouts = map[string]time.Duration{}
	for k, v := range o.pluginTimeouts {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("--plugin-timeout %s=%s: want a positive duration such as 2m", k, v)
		}
		o.timeouts[k] = d
	}
	return nil
}
