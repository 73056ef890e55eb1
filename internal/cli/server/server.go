package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/salvor-dev/salvor/internal/backup"
	"github.com/salvor-dev/salvor/internal/buildinfo"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/configmapref"
	"github.com/salvor-dev/salvor/internal/controller"
	"github.com/salvor-dev/salvor/internal/datamover"
	"github.com/salvor-dev/salvor/internal/hooks"
	"github.com/salvor-dev/salvor/internal/kopiarepo"
	"github.com/salvor-dev/salvor/internal/metrics"
	"github.com/salvor-dev/salvor/internal/operations"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/internal/resourcepolicy"
	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/restore"
	"github.com/salvor-dev/salvor/internal/selfservice"
	"github.com/salvor-dev/salvor/internal/snapshots"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// NewCommand returns `salvor server`.
func NewCommand(k *kube.Options) *cobra.Command {
	o := &options{kube: k}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run Salvor's controllers",
		Long: `Runs the controllers that carry out backups, check and sync backup storage
locations, and expire and delete backups. Plugins are every executable under
--plugin-dir plus those built into salvor; each runs as one long-lived
process, restarted if it dies.`,
		Example: `  salvor server --kubeconfig ~/.kube/config --namespace salvor --plugin-dir /plugins`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.complete(cmd.Flags()); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.bind(cmd.Flags())
	return cmd
}

func (o *options) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	opts := &slog.HandlerOptions{Level: o.level}
	var handler slog.Handler = slog.NewJSONHandler(os.Stderr, opts)
	if o.logFormat == "text" {
		handler = slog.NewTextHandler(os.Stderr, opts)
	}
	logger := slog.New(handler)
	log.SetLogger(logr.FromSlogHandler(logger.Handler()))
	cfg, err := o.kube.RESTConfig()
	if err != nil {
		return err
	}
	// The server's own throughput is the limit, not a client-side one:
	// client-go's rate limiter would cap restores at QPS creates a second.
	cfg.QPS, cfg.Burst = o.clientQPS, o.clientBurst
	// Deprecation warnings (v1 Endpoints, ...) would be logged once per
	// list of every backup; they say nothing the user can act on.
	cfg.WarningHandler = rest.NoWarnings{}
	// The API server would gzip every large LIST page: on the network
	// between a server and its API server that costs both sides more CPU
	// than the bytes it saves.
	cfg.DisableCompression = true
	// An audit log tells the server's requests from the CLI's by this.
	build := buildinfo.Get()
	cfg.UserAgent = fmt.Sprintf("salvor-server/%s (%s)", cmp.Or(build.Version, "unknown"), build.Platform)

	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := checkGlobalPolicies(ctx, dyn, o.kube.Namespace, o.globalPolicies, logger); err != nil {
		return err
	}

	removeKubeconfig, err := o.kube.ShareWithPlugins()
	if err != nil {
		return err
	}
	defer removeKubeconfig()
	plugins := host.NewManager(host.Options{
		Logger:         logger,
		Timeouts:       o.timeouts,
		Grace:          o.pluginGrace,
		PluginLogLevel: o.logLevel,
		OnRestart:      metrics.ObservePluginRestart,
		OnCall:         metrics.ObservePluginCall,
	})
	defer plugins.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := plugins.Add(startCtx, host.Command{Path: self, Args: []string{"run-plugins"}}); err != nil {
		return fmt.Errorf("starting the built-in plugins: %w", err)
	}
	if o.pluginDir != "" {
		if err := plugins.Discover(startCtx, o.pluginDir); err != nil {
			return err
		}
	}
	for _, p := range plugins.List() {
		logger.Info("plugin available", "kind", p.Kind, "name", p.Name, "binary", p.Binary)
	}

	metricsOptions := metricsserver.Options{BindAddress: o.metricsAddress}
	if o.metricsSecure {
		// A self-signed certificate unless one is mounted; callers are
		// checked with TokenReview and SubjectAccessReview.
		metricsOptions.SecureServing = true
		metricsOptions.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  kube.Scheme(),
		Cache:                   cache.Options{DefaultNamespaces: map[string]cache.Config{o.kube.Namespace: {}}},
		Metrics:                 metricsOptions,
		HealthProbeBindAddress:  o.healthAddress,
		PprofBindAddress:        o.profilingAddress,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        "salvor-server",
		LeaderElectionNamespace: o.kube.Namespace,
	})
	if err != nil {
		return fmt.Errorf("creating the controller manager: %w", err)
	}
	// One JSON client reads backups' LIST pages and posts restores'
	// creates, each without decoding what it does not need.
	raw, err := restore.NewCreateClient(cfg)
	if err != nil {
		return err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	locations := &controller.Locations{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Plugins: plugins, Namespace: o.kube.Namespace,
		ConfineFilesystem: o.confineFilesystem || len(o.filesystemDirs) > 0, FilesystemDirs: o.filesystemDirs}
	runs := &controller.Runs{}
	pageSize := o.pageSize
	if pageSize == 0 {
		pageSize = -1 // the engine's "no pages"
	}
	hookRunner, err := hooks.NewRunner(cfg)
	if err != nil {
		return err
	}
	backups := &backup.Engine{Dynamic: dyn, REST: raw, Discovery: disc, Plugins: plugins, Workers: o.workers, PageSize: pageSize, Hooks: hookRunner}
	// One maker of kopia repositories for the uploads and the deletions,
	// so that they take turns.
	passwords := &datamover.Passwords{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: o.kube.Namespace,
		Derive: func(ctx context.Context, bsl *salvorv1.BackupStorageLocation) (string, error) {
			keys, _, err := locations.EncryptionKeys(ctx, bsl)
			if err != nil {
				return "", err
			}
			return keys.RepositoryPassword(bsl.Name), nil
		}}
	// Maintenance that frees data at once is kept apart from everything
	// else that uses its repository.
	var gate *datamover.Gate
	if o.safety == kopiarepo.SafetyNone {
		gate = &datamover.Gate{}
	}
	repositories := &datamover.Repositories{Locate: locations.RepositoryLocation, Passwords: passwords, Gate: gate, Reader: mgr.GetAPIReader()}
	// Uploads and downloads share their mover pods' image, account and
	// placement, and their limits.
	movers := datamover.Movers{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespace: o.kube.Namespace, Log: logger,
		Pods: datamover.Pods{Image: o.moverImage, ServiceAccount: o.moverAccount, NodeSelector: o.moverNodeSelector,
			Tolerations: o.moverTolerations, Resources: o.moverResources, CacheSize: o.moverCacheSize},
		Concurrency: o.moverConcurrency, PerNode: o.moverPerNode, DefaultTimeout: o.operationTimeout, Passwords: passwords,
		MaintainFrequency: o.repoMaintain, Gate: gate,
	}
	maintenance := &datamover.MaintenanceReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespace: o.kube.Namespace,
		Pods: movers.Pods, Safety: o.safety, Keep: o.keepMaintenanceJobs, Gate: gate, Log: logger}
	uploads := &datamover.UploadReconciler{Movers: movers, Dynamic: dyn, Repositories: repositories}
	podVolumeBackups := &datamover.PodVolumeBackupReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespace: o.kube.Namespace,
		Repositories: repositories, Passwords: passwords, MaintainFrequency: o.repoMaintain, Gate: gate}
	schedules := &controller.ScheduleReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Discovery: disc, Locations: locations, Log: logger, SkipImmediately: o.scheduleSkip}
	copies := snapshots.NewCopies()
	reconcilers := []interface{ SetupWithManager(ctrl.Manager) error }{
		&controller.BackupReconciler{
			Client:        mgr.GetClient(),
			APIReader:     mgr.GetAPIReader(),
			Engine:        backups,
			Runs:          runs,
			Locations:     locations,
			Log:           logger,
			MaxConcurrent: o.maxConcurrentBackups,
			DefaultTTL:    o.defaultTTL,

			GlobalVolumePolicies:     o.globalPolicies,
			DefaultVolumesToFsBackup: o.defaultFSBackup,
		},
		&controller.LocationReconciler{Client: mgr.GetClient(), Locations: locations, Log: logger, Interval: o.locationInterval, SyncPeriod: o.syncPeriod},
		&controller.SnapshotLocationReconciler{Client: mgr.GetClient(), Locations: locations, Log: logger, Interval: o.locationInterval},
		&controller.GCReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), MovedData: repositories, Events: mgr.GetEventRecorder("salvor-server"), Locations: locations, Log: logger, Runs: runs},
		&controller.ServerStatusReconciler{Client: mgr.GetClient(), Plugins: func() []salvorv1.PluginInfo {
			var out []salvorv1.PluginInfo
			for _, p := range plugins.List() {
				out = append(out, salvorv1.PluginInfo{Name: p.Name, Kind: string(p.Kind)})
			}
			return out
		}},
		schedules,
		&controller.DownloadReconciler{Client: mgr.GetClient(), Locations: locations, Log: logger},
		&controller.VerifyReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Locations: locations, Dynamic: dyn, MovedData: repositories, Log: logger},
		&controller.RestoreReconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Locations: locations, Log: logger,
			Engine: &restore.Engine{Dynamic: dyn, REST: raw, Discovery: disc, Plugins: plugins, Workers: o.restoreWorkers, ReadyTimeout: o.readyTimeout, Tiers: o.restoreTiers, MemoryBudget: o.memoryBudget,
				TerminatingTimeout: o.terminatingTimeout, Hooks: hookRunner, HookWaitTimeout: o.hookWait},
			Copies:        copies,
			MaxConcurrent: o.maxConcurrentBackups,
		},
		&snapshots.CopyReconciler{Client: mgr.GetClient(), Copies: copies},
		&controller.RestoreOperationsReconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Locations: locations, Log: logger,
			Tracker: &operations.Tracker{Ceiling: o.operationSync}, DefaultTimeout: o.operationTimeout,
			FinalizeAttempts: o.finalizeAttempts, FinalizeBackoff: o.finalizeBackoff,
		},
		uploads,
		podVolumeBackups,
		&datamover.PodVolumeRestoreReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespace: o.kube.Namespace, Passwords: passwords, Gate: gate},
		&datamover.DownloadReconciler{Movers: movers},
		maintenance,
		&controller.OperationsReconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Locations: locations,
			Engine: backups, Log: logger, FinalizeAttempts: o.finalizeAttempts, FinalizeBackoff: o.finalizeBackoff, Runs: runs,
			Tracker:          &operations.Tracker{Ceiling: o.operationSync},
			DefaultTimeout:   o.operationTimeout,
			ReleaseSnapshots: uploads.ReleaseSnapshots,
		},
	}
	for _, r := range reconcilers {
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if o.tenants {
		err := selfservice.Setup(mgr, selfservice.Server{
			Config: cfg, Scheme: kube.Scheme(), Namespace: o.kube.Namespace, Log: logger,
			Location:  locations.Get,
			Schedules: *schedules,
			ResourceList: func(ctx context.Context, b *salvorv1.Backup) (map[string][]string, error) {
				store, err := locations.StoreNamed(ctx, b.Spec.StorageLocation)
				if err != nil {
					return nil, err
				}
				return store.GetResourceList(ctx, b.Name)
			},
			StoredBytes: func(ctx context.Context, b *salvorv1.Backup) (int64, bool, error) {
				store, err := locations.StoreNamed(ctx, b.Spec.StorageLocation)
				if err != nil {
					return 0, false, err
				}
				return store.StoredBytes(ctx, b.Name)
			},
			Resources: func() ([]resources.Resource, error) {
				served, _, err := resources.Discover(disc)
				return served, err
			},
		})
		if err != nil {
			return fmt.Errorf("--tenants: %w", err)
		}
	}
	if o.healthAddress != "0" {
		health := &controller.Health{
			Synced:    controller.CacheSynced(mgr.GetCache()),
			Locations: controller.CachedLocations(mgr.GetClient(), o.kube.Namespace),
			Namespace: o.kube.Namespace,
			Interval:  o.locationInterval,
			Log:       logger,
		}
		// Runs only on the leader: from then on its controllers run too.
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			health.Lead()
			<-ctx.Done()
			return nil
		})); err != nil {
			return err
		}
		if err := mgr.AddHealthzCheck("controllers", health.Live); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("controllers", health.Ready); err != nil {
			return err
		}
	}
	metrics.ObserveBuild(build.Version, build.Commit, build.GoVersion)
	logger.Info("salvor server starting", "namespace", o.kube.Namespace, "plugins", len(plugins.List()), "version", build.Version, "commit", build.Commit)
	return mgr.Start(ctx)
}

// checkGlobalPolicies reads the global backup volume policies, so that a
// server never runs backups without the baseline it was asked for. Only
// their volume policies apply to every backup, as in Velero; resource lists
// there are a backup's own choice, and are ignored with a warning.
func checkGlobalPolicies(ctx context.Context, dyn dynamic.Interface, namespace, name string, log *slog.Logger) error {
	global, problems, err := resourcepolicy.LoadGlobal(ctx, configmapref.Dynamic(dyn), namespace, name)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	if global.Lists() != nil {
		log.Warn("the global backup volume policies' includeExcludePolicy is ignored: only volume policies apply to every backup (as in Velero); put resource lists in a backup's own resource policies",
			"configmap", namespace+"/"+name)
	}
	if !global.Filters().Empty() {
		log.Warn("the global backup volume policies' clusterScopedFilterPolicy and namespacedFilterPolicies are ignored: only volume policies apply to every backup (as in Velero); put filter policies in a backup's own resource policies",
			"configmap", namespace+"/"+name)
	}
	return nil
}
