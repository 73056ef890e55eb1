package datamover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimectrl "sigs.k8s.io/controller-runtime"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/salvor-dev/salvor/internal/kopiarepo"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// RepositoryLabel names, on a maintenance Job and its pods, the
// BackupRepository they serve.
const RepositoryLabel = "salvor.dev/backup-repository"

// Maintenance defaults, Velero's: kopia maintenance hourly, the latest
// three Jobs of each repository kept to read.
const (
	DefaultMaintainFrequency = time.Hour
	DefaultKeepJobs          = 3
	// recentRuns is how many runs a repository's status lists.
	recentRuns = 3
)

// RepositoryName is the BackupRepository of namespace ns's repository in
// location bsl: readable where the names allow, hashed where they are too
// long for a name.
func RepositoryName(bsl, ns string) string {
	name := bsl + "-" + ns + "-kopia"
	if len(name) <= validation.DNS1123SubdomainMaxLength-20 { // room for a Job's -maintain-N suffix
		return name
	}
	sum := sha256.Sum256([]byte(bsl + "/" + ns))
	return bsl[:min(len(bsl), 100)] + "-" + hex.EncodeToString(sum[:8]) + "-kopia"
}

// NewRepository is the BackupRepository the server records for namespace
// ns's repository in bsl, owned by the location (it goes with it).
func NewRepository(bsl *salvorv1.BackupStorageLocation, ns string, frequency time.Duration) *salvorv1.BackupRepository {
	return &salvorv1.BackupRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: bsl.Namespace, Name: RepositoryName(bsl.Name, ns),
			Labels: map[string]string{ComponentLabel: Component, salvorv1.LocationLabel: salvorv1.LabelValue(bsl.Name)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: salvorv1.GroupVersion.String(), Kind: "BackupStorageLocation",
				Name: bsl.Name, UID: bsl.UID}}},
		Spec: salvorv1.BackupRepositorySpec{VolumeNamespace: ns, BackupStorageLocation: bsl.Name, RepositoryType: "kopia",
			MaintenanceFrequency: metav1.Duration{Duration: frequency}},
	}
}

// MaintenanceJob is run n of kopia's full maintenance on repository r: a
// Job whose one pod is a mover pod (the server's image, the mover's
// account, no volume but its cache) running `salvor data-mover maintain`.
// It is not retried by the Job: the next scheduled run is the retry.
func (p Pods) MaintenanceJob(r *salvorv1.BackupRepository, bsl *salvorv1.BackupStorageLocation, safety kopiarepo.Safety, n int) *batchv1.Job {
	name := r.Name + "-maintain-" + strconv.Itoa(n)
	l := map[string]string{RepositoryLabel: salvorv1.LabelValue(r.Name), ComponentLabel: Component}
	args := []string{"data-mover", "maintain", "--backup-repository", r.Name, "--namespace", r.Namespace,
		"--safety", string(safety), "--work-dir", WorkPath}
	pod := p.pod(name, 0, l, args, bsl)
	pod.Spec.Containers[0].Name = "maintain"
	backoff, yes := int32(0), true
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name, Labels: l,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: salvorv1.GroupVersion.String(), Kind: "BackupRepository",
				Name: r.Name, UID: r.UID, Controller: &yes}}},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff,
			Template:     corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: pod.Spec},
		},
	}
}

// MaintenanceReconciler runs kopia's maintenance on each BackupRepository
// at its frequency, one Job at a time, and records each run on it.
type MaintenanceReconciler struct {
	Client    ctrl.Client
	APIReader ctrl.Reader
	Namespace string
	Pods      Pods
	// Safety is how full maintenance frees data (--repo-maintenance-safety).
	Safety kopiarepo.Safety
	// Keep is how many finished Jobs of a repository stay (0: 3).
	Keep int
	// Gate keeps moves of a repository apart from maintenance that frees
	// data at once (Safety none); nil when Safety is full.
	Gate *Gate
	Log  *slog.Logger
	now  func() time.Time
}

// SetupWithManager registers the reconciler for BackupRepositories and
// their Jobs.
func (r *MaintenanceReconciler) SetupWithManager(mgr runtimectrl.Manager) error {
	return runtimectrl.NewControllerManagedBy(mgr).Named("repository-maintenance").
		For(&salvorv1.BackupRepository{}).
		Owns(&batchv1.Job{}).
		Complete(r)
}

func (r *MaintenanceReconciler) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

func (r *MaintenanceReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	repo := &salvorv1.BackupRepository{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, repo); err != nil {
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	if repo.Namespace != r.Namespace || !repo.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	if repo.Status.Phase == "" {
		repo.Status.Phase = salvorv1.BackupRepositoryPhaseNew
		if err := r.Client.Status().Update(ctx, repo); err != nil {
			return reconcile.Result{}, err
		}
	}
	if repo.Status.MaintenanceJob != "" {
		return r.follow(ctx, repo)
	}
	due := NextMaintenance(repo)
	if wait := due.Sub(r.clock()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	return r.start(ctx, repo)
}

// NextMaintenance is when repository r is due: its frequency after its
// last run (successful or not), or after it was made.
func NextMaintenance(r *salvorv1.BackupRepository) time.Time {
	freq := r.Spec.MaintenanceFrequency.Duration
	if freq <= 0 {
		freq = DefaultMaintainFrequency
	}
	last := r.CreationTimestamp.Time
	if n := len(r.Status.RecentMaintenance); n > 0 && r.Status.RecentMaintenance[n-1].CompleteTimestamp != nil {
		last = r.Status.RecentMaintenance[n-1].CompleteTimestamp.Time
	}
	return last.Add(freq)
}

// start makes the next maintenance Job, once nothing forbids it.
func (r *MaintenanceReconciler) start(ctx context.Context, repo *salvorv1.BackupRepository) (reconcile.Result, error) {
	bsl := &salvorv1.BackupStorageLocation{}
	if err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: repo.Namespace, Name: repo.Spec.BackupStorageLocation}, bsl); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.setMessage(ctx, repo, salvorv1.BackupRepositoryPhaseNotReady, fmt.Sprintf("backup storage location %s does not exist", repo.Spec.BackupStorageLocation))
		}
		return reconcile.Result{}, err
	}
	if bsl.Spec.ReadOnly() {
		// Nothing is written to a ReadOnly location, maintenance included.
		return reconcile.Result{RequeueAfter: time.Hour}, r.setMessage(ctx, repo, repo.Status.Phase, fmt.Sprintf("backup storage location %s is ReadOnly: maintenance waits until it is ReadWrite", bsl.Name))
	}
	n := len(repo.Status.RecentMaintenance) + 1
	if last, err := r.lastJobNumber(ctx, repo); err != nil {
		return reconcile.Result{}, err
	} else if last >= n {
		n = last + 1
	}
	job := r.Pods.MaintenanceJob(repo, bsl, r.Safety, n)
	var unlock func()
	if r.Gate != nil {
		unlock = r.Gate.lock()
		defer unlock()
		moving, err := r.Gate.moving(ctx, r.APIReader, repo)
		if err != nil {
			return reconcile.Result{}, err
		}
		if moving != "" {
			// Freeing data at once while a mover writes could free what
			// it is writing: maintenance waits for it.
			return reconcile.Result{RequeueAfter: 5 * time.Second}, r.setMessage(ctx, repo, repo.Status.Phase, "maintenance waits for "+moving+", which writes the repository")
		}
	}
	// The Job is recorded before it is made: a server that stops between
	// the two finds the name and makes it then.
	repo.Status.MaintenanceJob, repo.Status.Message = job.Name, ""
	if err := r.Client.Status().Update(ctx, repo); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return reconcile.Result{}, fmt.Errorf("BackupRepository %s: creating maintenance Job %s: %w", repo.Name, job.Name, err)
	}
	r.Log.Info("repository maintenance started", "repository", repo.Name, "job", job.Name, "safety", r.Safety)
	return reconcile.Result{}, nil
}

// follow records the running Job's end (its changes bring the repository
// back), then keeps the latest Jobs.
func (r *MaintenanceReconciler) follow(ctx context.Context, repo *salvorv1.BackupRepository) (reconcile.Result, error) {
	job := &batchv1.Job{}
	err := r.APIReader.Get(ctx, ctrl.ObjectKey{Namespace: repo.Namespace, Name: repo.Status.MaintenanceJob}, job)
	var result salvorv1.MaintenanceResult
	var start, end *metav1.Time
	msg := ""
	switch {
	case apierrors.IsNotFound(err):
		// Recorded, never made (the server stopped in between), or
		// deleted by hand: made (again) unless its record is stale.
		bsl := &salvorv1.BackupStorageLocation{}
		if err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: repo.Namespace, Name: repo.Spec.BackupStorageLocation}, bsl); err != nil {
			return reconcile.Result{}, ctrl.IgnoreNotFound(err)
		}
		now := metav1.NewTime(r.clock())
		result, start, end, msg = salvorv1.MaintenanceFailed, &now, &now, "its Job "+repo.Status.MaintenanceJob+" is gone"
	case err != nil:
		return reconcile.Result{}, err
	default:
		result, msg = jobResult(job)
		if result == "" {
			return reconcile.Result{}, nil
		}
		start, end = job.Status.StartTime, job.Status.CompletionTime
		if end == nil {
			now := metav1.NewTime(r.clock())
			end = &now
		}
		if start == nil {
			start = end
		}
	}
	// The maintain pod reports size, snapshots and its error on the
	// status; the run's message is the pod's error when it failed.
	if result == salvorv1.MaintenanceFailed && repo.Status.Message != "" {
		msg = repo.Status.Message
	}
	run := salvorv1.BackupRepositoryMaintenanceStatus{Result: result, StartTimestamp: start, CompleteTimestamp: end, Message: msg}
	repo.Status.RecentMaintenance = append(repo.Status.RecentMaintenance, run)
	if n := len(repo.Status.RecentMaintenance); n > recentRuns {
		repo.Status.RecentMaintenance = repo.Status.RecentMaintenance[n-recentRuns:]
	}
	repo.Status.MaintenanceJob = ""
	if result == salvorv1.MaintenanceSucceeded {
		repo.Status.Phase, repo.Status.LastMaintenanceTime, repo.Status.Message = salvorv1.BackupRepositoryPhaseReady, end, ""
	} else {
		repo.Status.Phase, repo.Status.Message = salvorv1.BackupRepositoryPhaseNotReady, "the last maintenance failed: "+msg
	}
	if err := r.Client.Status().Update(ctx, repo); err != nil {
		return reconcile.Result{}, err
	}
	r.Log.Info("repository maintenance ended", "repository", repo.Name, "result", result, "message", msg, "sizeBytes", repo.Status.SizeBytes)
	if err := r.prune(ctx, repo); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: time.Until(NextMaintenance(repo))}, nil
}

// jobResult is how a finished Job ended ("" while it runs), and why it
// failed.
func jobResult(job *batchv1.Job) (salvorv1.MaintenanceResult, string) {
	for _, c := range job.Status.Conditions {
		if c.Status != "True" {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return salvorv1.MaintenanceSucceeded, ""
		case batchv1.JobFailed:
			return salvorv1.MaintenanceFailed, fmt.Sprintf("Job %s failed: %s %s", job.Name, c.Reason, c.Message)
		}
	}
	return "", ""
}

// jobs are repository r's maintenance Jobs, oldest first.
func (r *MaintenanceReconciler) jobs(ctx context.Context, repo *salvorv1.BackupRepository) ([]batchv1.Job, error) {
	list := &batchv1.JobList{}
	if err := r.APIReader.List(ctx, list, ctrl.InNamespace(repo.Namespace), ctrl.MatchingLabels{RepositoryLabel: salvorv1.LabelValue(repo.Name)}); err != nil {
		return nil, err
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if metav1.IsControlledBy(&j, repo) {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(i, j int) bool { return jobNumber(&out[i], repo) < jobNumber(&out[j], repo) })
	return out, nil
}

func jobNumber(job *batchv1.Job, repo *salvorv1.BackupRepository) int {
	n, _ := strconv.Atoi(job.Name[min(len(job.Name), len(repo.Name+"-maintain-")):])
	return n
}

func (r *MaintenanceReconciler) lastJobNumber(ctx context.Context, repo *salvorv1.BackupRepository) (int, error) {
	jobs, err := r.jobs(ctx, repo)
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	return jobNumber(&jobs[len(jobs)-1], repo), nil
}

// prune deletes the repository's finished Jobs but the latest Keep.
func (r *MaintenanceReconciler) prune(ctx context.Context, repo *salvorv1.BackupRepository) error {
	jobs, err := r.jobs(ctx, repo)
	if err != nil {
		return err
	}
	keep := r.Keep
	if keep <= 0 {
		keep = DefaultKeepJobs
	}
	background := metav1.DeletePropagationBackground
	for i := 0; i < len(jobs)-keep; i++ {
		if res, _ := jobResult(&jobs[i]); res == "" {
			continue
		}
		if err := r.Client.Delete(ctx, &jobs[i], &ctrl.DeleteOptions{PropagationPolicy: &background}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("BackupRepository %s: deleting old maintenance Job %s: %w", repo.Name, jobs[i].Name, err)
		}
	}
	return nil
}

func (r *MaintenanceReconciler) setMessage(ctx context.Context, repo *salvorv1.BackupRepository, phase salvorv1.BackupRepositoryPhase, msg string) error {
	if repo.Status.Message == msg && repo.Status.Phase == phase {
		return nil
	}
	repo.Status.Phase, repo.Status.Message = phase, msg
	return r.Client.Status().Update(ctx, repo)
}

// Gate keeps a repository's maintenance apart from everything else that
// uses the repository when maintenance frees data at once (Safety none):
// its moves (DataUploads and DataDownloads, whose pods the server starts),
// its file-system backups and restores (PodVolumeBackups and
// PodVolumeRestores, which the server accepts for the node agents), and
// the server's own reads and writes of it (a deleted backup's snapshots
// forgotten, a backup's moved data verified). Maintenance then sees no
// blob written after it listed the repository's indexes, which it would
// take for garbage. A use starts only while no maintenance Job is
// recorded on its repository, and a Job is recorded only while nothing
// uses its repository; both decisions are taken under one lock, and each
// writes its outcome before the lock is let go.
type Gate struct {
	mu sync.Mutex
	// server counts the server's own uses of each repository (by
	// RepositoryName) under way.
	server map[string]int
	// asked is when the server last found each repository's maintenance
	// in the way of its own use: a run due soon after waits for that use,
	// so that a deletion is not put off run after run.
	asked map[string]time.Time
}

// askedFor is how long a use of the server's that found maintenance in
// its way goes before the next run.
const askedFor = 30 * time.Second

func (g *Gate) lock() func() { g.mu.Lock(); return g.mu.Unlock }

// MaintenanceRunningError says that the server's use of a repository
// waits for the repository's maintenance Job.
type MaintenanceRunningError struct {
	// Repository is the BackupRepository, Job its running maintenance.
	Repository, Job string
}

func (e *MaintenanceRunningError) Error() string {
	return fmt.Sprintf("repository %s: its maintenance Job %s frees data at once: this waits until it ends", e.Repository, e.Job)
}

// enter records a use of the server's of the repository of location bsl
// and namespace ns (the BackupRepository in the location's namespace),
// until the function it returns is called; while that repository's
// maintenance runs it returns a *MaintenanceRunningError instead. A nil
// Gate lets every use in.
func (g *Gate) enter(ctx context.Context, reader ctrl.Reader, bsl *salvorv1.BackupStorageLocation, ns string) (func(), error) {
	if g == nil {
		return func() {}, nil
	}
	defer g.lock()()
	name := RepositoryName(bsl.Name, ns)
	job, err := g.maintaining(ctx, reader, bsl.Namespace, bsl.Name, ns)
	if err != nil {
		return nil, fmt.Errorf("repository %s: reading its maintenance: %w", name, err)
	}
	if job != "" {
		if g.asked == nil {
			g.asked = map[string]time.Time{}
		}
		g.asked[name] = time.Now()
		return nil, &MaintenanceRunningError{Repository: name, Job: job}
	}
	delete(g.asked, name)
	if g.server == nil {
		g.server = map[string]int{}
	}
	g.server[name]++
	return func() {
		defer g.lock()()
		if g.server[name]--; g.server[name] <= 0 {
			delete(g.server, name)
		}
	}, nil
}

// admit runs start, which records a use of the repository of location
// bsl and namespace ns that maintenance reads (a move InProgress, a node
// agent's backup or restore Accepted), unless that repository's
// maintenance runs; it then names the maintenance Job and leaves start
// undone. A nil Gate runs start.
func (g *Gate) admit(ctx context.Context, reader ctrl.Reader, namespace, bsl, ns string, start func() error) (string, error) {
	if g == nil {
		return "", start()
	}
	defer g.lock()() // past start, which the gate's other side reads
	job, err := g.maintaining(ctx, reader, namespace, bsl, ns)
	if err != nil || job != "" {
		return job, err
	}
	return "", start()
}

// moving names a use of repo's repository in progress ("" when none).
func (g *Gate) moving(ctx context.Context, reader ctrl.Reader, repo *salvorv1.BackupRepository) (string, error) {
	bsl, ns := repo.Spec.BackupStorageLocation, repo.Spec.VolumeNamespace
	name := RepositoryName(bsl, ns)
	if g.server[name] > 0 {
		return "the server, which reads or writes it (a deleted backup's snapshots forgotten, or moved data verified)", nil
	}
	if at, ok := g.asked[name]; ok && time.Since(at) < askedFor {
		return "the server, which asked for it during the last run (a deleted backup's snapshots forgotten, or moved data verified)", nil
	}
	ups := &salvorv1.DataUploadList{}
	if err := reader.List(ctx, ups, ctrl.InNamespace(repo.Namespace)); err != nil {
		return "", err
	}
	for _, u := range ups.Items {
		if u.Spec.BackupStorageLocation == bsl && u.Spec.SourceNamespace == ns && started(u.Status.Phase) {
			return "DataUpload " + u.Name, nil
		}
	}
	downs := &salvorv1.DataDownloadList{}
	if err := reader.List(ctx, downs, ctrl.InNamespace(repo.Namespace)); err != nil {
		return "", err
	}
	for _, d := range downs.Items {
		if d.Spec.BackupStorageLocation == bsl && d.Spec.SourceNamespace == ns && started(d.Status.Phase) {
			return "DataDownload " + d.Name, nil
		}
	}
	// A node agent takes an Accepted file-system backup or restore on its
	// own: accepted is started.
	pvbs := &salvorv1.PodVolumeBackupList{}
	if err := reader.List(ctx, pvbs, ctrl.InNamespace(repo.Namespace)); err != nil {
		return "", err
	}
	for _, p := range pvbs.Items {
		if p.Spec.BackupStorageLocation == bsl && p.Spec.Pod.Namespace == ns && accepted(p.Status.Phase) {
			return "PodVolumeBackup " + p.Name, nil
		}
	}
	pvrs := &salvorv1.PodVolumeRestoreList{}
	if err := reader.List(ctx, pvrs, ctrl.InNamespace(repo.Namespace)); err != nil {
		return "", err
	}
	for _, p := range pvrs.Items {
		if p.Spec.BackupStorageLocation == bsl && p.Spec.SourceNamespace == ns && accepted(p.Status.Phase) {
			return "PodVolumeRestore " + p.Name, nil
		}
	}
	return "", nil
}

// started says a move in phase p has begun and not ended.
func started(p salvorv1.DataMoverPhase) bool {
	return !p.Ended() && !slices.Contains([]salvorv1.DataMoverPhase{"", salvorv1.DataMoverPhaseNew, salvorv1.DataMoverPhaseAccepted, salvorv1.DataMoverPhasePrepared}, p)
}

// accepted says a node agent's backup or restore in phase p has been
// handed to the agent and not ended.
func accepted(p salvorv1.DataMoverPhase) bool {
	return !p.Ended() && p != "" && p != salvorv1.DataMoverPhaseNew
}

// maintaining names the maintenance Job running on the repository of
// location bsl and namespace ns ("" when none).
func (g *Gate) maintaining(ctx context.Context, reader ctrl.Reader, namespace, bsl, ns string) (string, error) {
	repo := &salvorv1.BackupRepository{}
	err := reader.Get(ctx, ctrl.ObjectKey{Namespace: namespace, Name: RepositoryName(bsl, ns)}, repo)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return repo.Status.MaintenanceJob, nil
}

// EnsureRepository records namespace ns's repository in bsl as a
// BackupRepository, once.
func EnsureRepository(ctx context.Context, c ctrl.Client, bsl *salvorv1.BackupStorageLocation, ns string, frequency time.Duration) error {
	if frequency <= 0 {
		frequency = DefaultMaintainFrequency
	}
	err := c.Create(ctx, NewRepository(bsl, ns, frequency))
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("recording the repository of namespace %s in location %s: %w", ns, bsl.Name, err)
	}
	return nil
}

// Maintain runs kopia's full maintenance on BackupRepository m.Name, in
// the maintenance Job's pod, and reports on its status the repository's
// size and snapshots afterwards, or the error.
func (m *Mover) Maintain(ctx context.Context, safety kopiarepo.Safety) error {
	r := &salvorv1.BackupRepository{}
	if err := m.Client.Get(ctx, ctrl.ObjectKey{Namespace: m.Namespace, Name: m.Name}, r); err != nil {
		return fmt.Errorf("BackupRepository %s/%s: %w", m.Namespace, m.Name, err)
	}
	err := m.maintain(ctx, r, safety)
	if err != nil {
		_ = m.patch(context.WithoutCancel(ctx), &salvorv1.BackupRepository{}, map[string]any{"message": err.Error()})
	}
	return err
}

func (m *Mover) maintain(ctx context.Context, r *salvorv1.BackupRepository, safety kopiarepo.Safety) error {
	repo, bsl, err := m.open(ctx, r.Spec.BackupStorageLocation, r.Spec.VolumeNamespace, false)
	if err != nil {
		return err
	}
	defer func() { repo.Close(context.WithoutCancel(ctx)) }()
	// The repository locks its blobs as its location does now (made
	// immutable after the repository was, or no longer); a change is
	// taken by reopening, and the full maintenance below renews the lock
	// of every blob in use.
	retention, err := Retention(bsl)
	if err != nil {
		return err
	}
	changed, err := repo.Retain(ctx, retention)
	if err != nil {
		return fmt.Errorf("repository of namespace %s in location %s: %w", r.Spec.VolumeNamespace, r.Spec.BackupStorageLocation, err)
	}
	if changed {
		repo.Close(context.WithoutCancel(ctx))
		if repo, _, err = m.open(ctx, r.Spec.BackupStorageLocation, r.Spec.VolumeNamespace, false); err != nil {
			return err
		}
	}
	if err := repo.Maintain(ctx, true, safety); err != nil {
		return fmt.Errorf("repository of namespace %s in location %s: maintenance: %w", r.Spec.VolumeNamespace, r.Spec.BackupStorageLocation, err)
	}
	size, err := repo.Size(ctx)
	if err != nil {
		return err
	}
	snaps, err := repo.Snapshots(ctx)
	if err != nil {
		return err
	}
	return m.patch(ctx, &salvorv1.BackupRepository{}, map[string]any{"sizeBytes": size, "snapshots": len(snaps), "message": ""})
}
