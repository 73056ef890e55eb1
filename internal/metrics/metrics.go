package metrics

import (
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/salvor-dev/salvor/pkg/plugin/kind"
)

var (
	// Backups counts backups that reached a phase.
	Backups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "salvor_backups_total", Help: "Backups that reached each phase, by the namespace they work for.",
	}, []string{"namespace", "phase"})
	// BackupsInProgress is the number of backups running now.
	BackupsInProgress = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "salvor_backups_in_progress", Help: "Backups running now.",
	})
	// ItemsBackedUp counts items written into backups.
	ItemsBackedUp = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "salvor_backup_items_total", Help: "Items written into backups.",
	})
	// BackupDuration is how long backups took, by final phase.
	BackupDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "salvor_backup_duration_seconds", Help: "Time from a backup's start to its end.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 16),
	}, []string{"namespace", "phase"})
	// PluginCalls counts plugin calls by kind, method and outcome.
	PluginCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "salvor_plugin_calls_total", Help: "Plugin calls by kind, method and outcome.",
	}, []string{"kind", "method", "outcome"})
	// PluginCallDuration is the latency of plugin calls.
	PluginCallDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "salvor_plugin_call_duration_seconds", Help: "Latency of plugin calls.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 12),
	}, []string{"kind", "method"})
	// PluginRestarts counts restarts of plugin processes by binary.
	PluginRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "salvor_plugin_restarts_total", Help: "Plugin processes restarted, by binary.",
	}, []string{"binary"})
)

// ObservePluginCall is a host.Options.OnCall.
func ObservePluginCall(k kind.Kind, method, outcome string, took time.Duration) {
	PluginCalls.WithLabelValues(string(k), method, outcome).Inc()
	PluginCallDuration.WithLabelValues(string(k), method).Observe(took.Seconds())
}

// ObservePluginRestart is a host.Options.OnRestart.
func ObservePluginRestart(binary string) {
	PluginRestarts.WithLabelValues(filepath.Base(binary)).Inc()
}

var (
	// OperationsInFlight is the number of plugin operations followed now, by plugin.
	OperationsInFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "salvor_operations_in_flight", Help: "Long-running plugin operations being followed, by plugin.",
	}, []string{"plugin"})
	// OperationCancels counts Cancel calls sent to plugins (user cancel, timeouts).
	OperationCancels = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "salvor_operation_cancels_total", Help: "Cancel calls sent to plugins for their operations.",
	}, []string{"plugin"})
)

var (
	// OperationDuration is how long operations ran, by plugin and final phase.
	OperationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "salvor_operation_duration_seconds", Help: "Time from an operation's start to its end.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 16),
	}, []string{"plugin", "phase"})
	// OperationTimeouts counts operations ended by their timeout.
	OperationTimeouts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "salvor_operation_timeouts_total", Help: "Operations ended because they outlived their timeout.",
	}, []string{"plugin"})
)

var (
	// ScheduleLastSuccess is when each schedule's newest Completed backup
	// ended (its creation while it has none): alert on it being old.
	ScheduleLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "salvor_schedule_last_successful_backup_timestamp_seconds",
		Help: "When the schedule's newest Completed backup ended (the schedule's creation while it has none), in seconds since the epoch.",
	}, []string{"namespace", "schedule"})
	// ScheduleRuns counts a schedule's runs by outcome: started, skipped,
	// failed_validation.
	ScheduleRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "salvor_schedule_runs_total", Help: "Schedule runs by outcome: started, skipped, failed_validation.",
	}, []string{"namespace", "schedule", "outcome"})
	// ScheduleRetentionDeletes counts backups deleted by a schedule's retention.
	ScheduleRetentionDeletes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "salvor_schedule_retention_deletions_total", Help: "Backups deleted because their schedule's retention keeps them no more.",
	}, []string{"namespace", "schedule"})
)

// ForgetSchedule drops a deleted schedule's series, so that its alert
// does not fire forever.
func ForgetSchedule(namespace, name string) {
	ScheduleLastSuccess.DeleteLabelValues(namespace, name)
}

// BuildInfo is 1, labelled with the server's build.
var BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "salvor_build_info", Help: "The running server's build: always 1, labelled with its version, commit and Go version.",
}, []string{"version", "commit", "go_version"})

// ObserveBuild sets salvor_build_info.
func ObserveBuild(version, commit, goVersion string) {
	BuildInfo.WithLabelValues(version, commit, goVersion).Set(1)
}

var (
	// Restores counts restores that ended, by phase.
	Restores = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "salvor_restores_total", Help: "Restores that ended, by final phase and the namespace they work for.",
	}, []string{"namespace", "phase"})
	// RestoreDuration is how long restores took, by final phase.
	RestoreDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "salvor_restore_duration_seconds", Help: "Time from a restore's start to its end.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 16),
	}, []string{"namespace", "phase"})
	// ItemsRestored counts items restores created or patched.
	ItemsRestored = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "salvor_restore_items_total", Help: "Items restores created or patched.",
	})
	// LocationAvailable is 1 for a backup storage location found available
	// at its last check, 0 otherwise.
	LocationAvailable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "salvor_location_available", Help: "1 if the backup storage location was available at its last check, else 0.",
	}, []string{"location"})
	// LocationLastSuccess is when the newest Completed backup in a
	// location ended.
	LocationLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "salvor_location_last_successful_backup_timestamp_seconds",
		Help: "When the newest Completed backup in the location ended, in seconds since the epoch.",
	}, []string{"location"})
	// OperationOldest is when the oldest operation in flight started, by plugin.
	OperationOldest = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "salvor_operation_oldest_start_timestamp_seconds",
		Help: "When the oldest plugin operation still being followed started, by plugin (absent when none is).",
	}, []string{"plugin"})
	// Verifications counts backup verifications that ended, by outcome
	// (Passed, Failed) and kind (integrity, or test-restore when a test
	// restore was part of it).
	Verifications = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "salvor_backup_verifications_total", Help: "Backup verifications that ended, by outcome and kind (integrity, test-restore).",
	}, []string{"outcome", "kind"})
)

var (
	// DataMoved counts the bytes of volume data moved, by direction
	// (upload: what a completed upload's volume held; new bytes written
	// into the bucket are on its DataUpload, incrementalBytes).
	DataMoved = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "salvor_data_moved_bytes_total", Help: "Bytes of volume data moved by completed data mover runs, by direction.",
	}, []string{"direction"})
	// DataMoves counts data mover runs that ended, by direction and phase.
	DataMoves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "salvor_data_moves_total", Help: "Data mover runs (DataUploads) that ended, by direction and final phase.",
	}, []string{"direction", "phase"})
	// DataMoveDuration is how long data mover runs took.
	DataMoveDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "salvor_data_move_duration_seconds", Help: "Time from a data mover run's start to its end, by direction and final phase.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 16),
	}, []string{"direction", "phase"})
)

// All are Salvor's metrics, registered with controller-runtime's registry
// (served on --metrics-address); the monitoring files may use only these.
var All = []prometheus.Collector{
	Backups,
	BackupsInProgress,
	ItemsBackedUp,
	BackupDuration,
	PluginCalls,
	PluginCallDuration,
	PluginRestarts,
	OperationsInFlight,
	OperationCancels,
	OperationDuration,
	OperationTimeouts,
	ScheduleLastSuccess,
	ScheduleRuns,
	ScheduleRetentionDeletes,
	BuildInfo,
	Restores,
	RestoreDuration,
	ItemsRestored,
	LocationAvailable,
	LocationLastSuccess,
	OperationOldest,
	Verifications,
	DataMoved,
	DataMoves,
	DataMoveDuration,
}

func init() {
	crmetrics.Registry.MustRegister(All...)
	// The data mover's series exist from the start, so the dashboard's
	// rates read 0 rather than nothing before a first upload.
	DataMoved.WithLabelValues("upload")
	for _, phase := range []string{"Completed", "Failed", "Canceled"} {
		DataMoves.WithLabelValues("upload", phase)
		DataMoveDuration.WithLabelValues("upload", phase)
	}
}
