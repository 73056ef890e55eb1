package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/salvor-dev/salvor/internal/metrics"
	"github.com/salvor-dev/salvor/internal/retention"
	"github.com/salvor-dev/salvor/internal/schedule"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// ScheduleReconciler creates a Schedule's backups when they are due and
// deletes the ones its retention does not keep. Package schedule says what
// is due, package retention what is kept; this moves phases, creates and
// deletes Backups, and counts.
type ScheduleReconciler struct {
	Client client.Client
	// APIReader reads a Schedule whole: the template fields of Velero's
	// that Salvor has not are kept by the API server but dropped by the
	// typed cache.
	APIReader client.Reader
	Discovery discovery.DiscoveryInterface
	Locations *Locations
	Log       *slog.Logger
	// Now is the clock (time.Now unless a test sets it).
	Now func() time.Time
	// SkipImmediately is spec.skipImmediately for schedules that leave
	// it out (the server's --schedule-skip-immediately, Velero's).
	SkipImmediately bool
	// The hooks by which one reconciler runs teams' schedules in their
	// own namespaces (salvor server --tenants, package selfservice); nil
	// for the server's own. Judge lists further problems of a schedule,
	// Stamp marks each backup it makes, and Retire deletes a backup its
	// retention does not keep (Client.Delete when nil).
	Judge  func(ctx context.Context, s *salvorv1.Schedule) ([]string, error)
	Stamp  func(s *salvorv1.Schedule, b *salvorv1.Backup)
	Retire func(ctx context.Context, b *salvorv1.Backup) error
}

// SetupWithManager registers the reconciler: a schedule is looked at when
// it changes, when one of its backups changes (an unfinished one ends, a
// new one lands) and when its next run is due.
func (r *ScheduleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&salvorv1.Schedule{}).
		Watches(&salvorv1.Backup{}, handler.EnqueueRequestsFromMapFunc(scheduleOf)).
		Named("schedule").
		Complete(r)
}

// SetupForTenants registers the reconciler for the schedules of every
// namespace but the server's (serverNamespace), as tenants reads them.
func (r *ScheduleReconciler) SetupForTenants(mgr ctrl.Manager, tenants cluster.Cluster, serverNamespace string) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	outside := func(o client.Object) bool { return o.GetNamespace() != serverNamespace }
	return ctrl.NewControllerManagedBy(mgr).
		WatchesRawSource(source.Kind(tenants.GetCache(), client.Object(&salvorv1.Schedule{}), &handler.EnqueueRequestForObject{}, predicate.NewPredicateFuncs(outside))).
		WatchesRawSource(source.Kind(tenants.GetCache(), client.Object(&salvorv1.Backup{}), handler.EnqueueRequestsFromMapFunc(scheduleOf), predicate.NewPredicateFuncs(outside))).
		Named("tenant-schedule").
		Complete(r)
}

// scheduleOf maps a backup to the schedule that made it.
func scheduleOf(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[salvorv1.ScheduleNameLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

// backupNameTime is the layout of the time in a scheduled backup's name.
const backupNameTime = "20060102150405"

// maxScheduleName keeps a backup's name (schedule, dash, 14 digits) short
// enough to be a label value, as restored items and progress resources
// carry it.
const maxScheduleName = validation.LabelValueMaxLength - 1 - len(backupNameTime)

func (r *ScheduleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Read past the cache: a status this process wrote a moment ago and
	// the cache has not caught up with would plan the same run again.
	s := &salvorv1.Schedule{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, s); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.ForgetSchedule(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if s.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	now := r.Now()
	before := s.Status.DeepCopy()
	log := r.Log.With("schedule", req.String())
	// What the schedule did is counted once its status says so: a write
	// that conflicts is redone, and must not be counted twice.
	var counts []func()
	count := func(outcome string, n int) {
		counts = append(counts, func() { metrics.ScheduleRuns.WithLabelValues(s.Namespace, s.Name, outcome).Add(float64(n)) })
	}
	write := func() error {
		if err := r.writeStatus(ctx, s, before); err != nil {
			return err
		}
		for _, c := range counts {
			c()
		}
		return nil
	}

	if s.Status.Phase == "" || s.Status.Phase == salvorv1.SchedulePhaseNew || s.Status.ObservedGeneration != s.Generation {
		problems, ignored, err := r.validate(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		if r.Judge != nil {
			more, err := r.Judge(ctx, s)
			if err != nil {
				return ctrl.Result{}, fmt.Errorf("schedule %s: %w", req, err)
			}
			problems = append(problems, more...)
		}
		s.Status.ObservedGeneration = s.Generation
		s.Status.ValidationErrors, s.Status.IgnoredFields = problems, ignored
		if len(problems) > 0 {
			s.Status.Phase = salvorv1.SchedulePhaseFailedValidation
			s.Status.NextRun = nil
			count("failed_validation", 1)
			log.Warn("schedule failed validation: it makes no backups until its spec is fixed", "problems", problems)
			return ctrl.Result{}, write()
		}
		s.Status.Phase = salvorv1.SchedulePhaseEnabled
		if len(ignored) > 0 {
			log.Info("schedule has Velero template fields Salvor does not act on", "ignored", ignored)
		}
	}
	if s.Status.Phase != salvorv1.SchedulePhaseEnabled {
		return ctrl.Result{}, write()
	}
	timing, err := schedule.Parse(s.Spec.Schedule)
	if err != nil { // validated above; only a changed parser gets here
		return ctrl.Result{}, err
	}

	list := &salvorv1.BackupList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels{salvorv1.ScheduleNameLabel: s.Name}); err != nil {
		return ctrl.Result{}, err
	}
	observeLastSuccess(s, list.Items)
	if err := r.retain(ctx, s, list.Items, timing.Zone, log); err != nil {
		return ctrl.Result{}, err
	}

	if s.Spec.Paused {
		if s.Status.PausedAt == nil {
			t := metav1.NewTime(now)
			s.Status.PausedAt = &t
			log.Info("schedule paused")
		}
		s.Status.NextRun = nil
		return ctrl.Result{}, write()
	}
	skipImmediately := r.SkipImmediately
	if s.Spec.SkipImmediately != nil {
		skipImmediately = *s.Spec.SkipImmediately
	}
	if s.Status.PausedAt != nil {
		s.Status.PausedAt = nil
		if skipImmediately {
			// Runs missed while paused are not made up: the next one is
			// the first scheduled time from now.
			t := metav1.NewTime(now)
			s.Status.LastScheduleTime = &t
		}
		log.Info("schedule unpaused", "skipImmediately", skipImmediately)
	}
	offset := schedule.Offset(string(s.UID), s.Spec.Jitter.Duration)
	var plan schedule.Plan
	switch last := s.Status.LastScheduleTime; {
	case last != nil:
		plan = timing.Plan(last.Time, now, offset, s.Spec.StartingDeadline.Duration)
	case skipImmediately:
		plan = timing.Plan(s.CreationTimestamp.Time, now, offset, s.Spec.StartingDeadline.Duration)
	default:
		// A new schedule backs up at once, as Velero's do.
		created := s.CreationTimestamp.Time
		plan = schedule.Plan{Scheduled: created, Run: created,
			Late: s.Spec.StartingDeadline.Duration > 0 && now.Sub(created) > s.Spec.StartingDeadline.Duration,
			Next: timing.Next(created).Add(offset)}
	}
	if plan.Due() {
		if plan.Missed > 0 {
			r.skip(s, count, now, plan.Missed, fmt.Sprintf("%d runs were missed while the server was not running; one catch-up run is made at most", plan.Missed), log)
		}
		switch unfinished := unfinishedBackups(list.Items); {
		case plan.Late:
			r.skip(s, count, now, 1, fmt.Sprintf("the run due at %s was missed while the server was not running, and is more than startingDeadline %s late",
				plan.Run.UTC().Format(time.RFC3339), s.Spec.StartingDeadline.Duration), log)
		case len(unfinished) > 0 && policy(s) == salvorv1.ConcurrencyForbid:
			r.skip(s, count, now, 1, fmt.Sprintf("backup %s is unfinished (concurrencyPolicy Forbid)", strings.Join(unfinished, ", ")), log)
		default:
			if len(unfinished) > 0 && policy(s) == salvorv1.ConcurrencyReplace {
				r.cancel(ctx, s, unfinished, log)
			}
			if err := r.createBackup(ctx, s, count, plan.Run, now, log); err != nil {
				return ctrl.Result{}, err
			}
		}
		t := metav1.NewTime(plan.Scheduled)
		s.Status.LastScheduleTime = &t
	}
	next := metav1.NewTime(plan.Next)
	s.Status.NextRun = &next
	if err := write(); err != nil {
		return ctrl.Result{}, err
	}
	wait := plan.Next.Sub(r.Now())
	if wait <= 0 {
		wait = time.Millisecond
	}
	return ctrl.Result{RequeueAfter: wait}, nil
}

func policy(s *salvorv1.Schedule) salvorv1.ConcurrencyPolicy {
	if s.Spec.ConcurrencyPolicy == "" {
		return salvorv1.ConcurrencyForbid
	}
	return s.Spec.ConcurrencyPolicy
}

func (r *ScheduleReconciler) skip(s *salvorv1.Schedule, count func(string, int), now time.Time, n int, reason string, log *slog.Logger) {
	t := metav1.NewTime(now)
	s.Status.LastSkipped = &t
	s.Status.SkippedRuns += n
	s.Status.LastSkipReason = reason
	count("skipped", n)
	log.Info("schedule skipped a run", "runs", n, "reason", reason)
}

// unfinishedBackups names the schedule's backups still running.
func unfinishedBackups(backups []salvorv1.Backup) []string {
	var out []string
	for _, b := range backups {
		if !b.Status.Phase.Ended() && b.DeletionTimestamp == nil && b.Annotations[salvorv1.SyncedAnnotation] == "" {
			out = append(out, b.Name)
		}
	}
	sort.Strings(out)
	return out
}

// cancel asks the backups to stop, as `salvor backup cancel` does.
func (r *ScheduleReconciler) cancel(ctx context.Context, s *salvorv1.Schedule, names []string, log *slog.Logger) {
	for _, n := range names {
		b := &salvorv1.Backup{}
		b.Namespace, b.Name = s.Namespace, n
		patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, salvorv1.CancelAnnotation, "replaced by a newer run of schedule "+s.Name))
		if err := r.Client.Patch(ctx, b, client.RawPatch("application/merge-patch+json", patch)); err != nil {
			log.Warn("cancelling an unfinished backup to replace it", "backup", n, "error", err)
			continue
		}
		log.Info("cancelled an unfinished backup to replace it (concurrencyPolicy Replace)", "backup", n)
	}
}

// createBackup creates the run's backup. Its name comes from the run's
// scheduled time, so a reconcile repeated after a crash or a stale read
// finds the backup it made instead of making another.
func (r *ScheduleReconciler) createBackup(ctx context.Context, s *salvorv1.Schedule, count func(string, int), run, now time.Time, log *slog.Logger) error {
	templateLabels, err := r.templateLabels(ctx, s)
	if err != nil {
		return err
	}
	labels, annotations := salvorv1.ScheduledBackupMeta(s, templateLabels)
	b := &salvorv1.Backup{
		ObjectMeta: metav1.ObjectMeta{
			Name:        s.Name + "-" + run.UTC().Format(backupNameTime),
			Namespace:   s.Namespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: *s.Spec.Template.DeepCopy(),
	}
	if v := s.Spec.Verify; v != nil && v.Every > 0 && s.Status.BackupsCreated%v.Every == 0 {
		// Verified once it ends (see VerifyReconciler).
		b.Annotations[salvorv1.VerifyAnnotation] = strconv.FormatInt(now.UnixNano(), 36)
		if v.RestoreIntoPrefix != "" {
			b.Annotations[salvorv1.VerifyPrefixAnnotation] = v.RestoreIntoPrefix
		}
	}
	if s.Spec.UseOwnerReferencesInBackup != nil && *s.Spec.UseOwnerReferencesInBackup {
		b.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: salvorv1.GroupVersion.String(), Kind: "Schedule", Name: s.Name, UID: s.UID,
		}}
	}
	if r.Stamp != nil {
		r.Stamp(s, b)
	}
	err = r.Client.Create(ctx, b)
	if apierrors.IsAlreadyExists(err) {
		have := &salvorv1.Backup{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(b), have); err != nil {
			return err
		}
		if have.Labels[salvorv1.ScheduleNameLabel] != s.Name {
			r.skip(s, count, now, 1, fmt.Sprintf("a backup named %s exists and was not made by this schedule", b.Name), log)
			return nil
		}
		err = nil // made by an earlier look at this same run
	} else if err == nil {
		s.Status.BackupsCreated++
	}
	if err != nil {
		return fmt.Errorf("schedule %s: creating backup %s: %w", s.Name, b.Name, err)
	}
	t := metav1.NewTime(now)
	s.Status.LastBackup = &t
	s.Status.LastBackupName = b.Name
	count("started", 1)
	log.Info("schedule created a backup", "backup", b.Name)
	return nil
}

// retain deletes the schedule's backups its retention does not keep,
// through the normal deletion path (the Backup goes, the garbage collector
// removes its files).
func (r *ScheduleReconciler) retain(ctx context.Context, s *salvorv1.Schedule, backups []salvorv1.Backup, zone *time.Location, log *slog.Logger) error {
	if s.Spec.Retention == nil {
		return nil
	}
	for loc, group := range retention.ByLocation(backups) {
		if bsl, err := r.Locations.Get(ctx, loc); err == nil && bsl.Spec.ReadOnly() {
			continue // nothing in a ReadOnly location is ever deleted
		}
		for _, d := range retention.Decide(*s.Spec.Retention, group, zone) {
			if !d.Delete() {
				continue
			}
			b := &salvorv1.Backup{}
			b.Namespace, b.Name = s.Namespace, d.Name
			retire := r.Client.Delete
			if r.Retire != nil {
				retire = func(ctx context.Context, o client.Object, _ ...client.DeleteOption) error {
					return r.Retire(ctx, o.(*salvorv1.Backup))
				}
			}
			if err := retire(ctx, b); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("schedule %s: deleting backup %s, which its retention does not keep: %w", s.Name, d.Name, err)
			}
			metrics.ScheduleRetentionDeletes.WithLabelValues(s.Namespace, s.Name).Inc()
			log.Info("deleted a backup its retention does not keep", "backup", d.Name, "phase", d.Phase, "time", d.Time)
		}
	}
	return nil
}

// KeptBySchedule says which retention rules of its schedule keep b; none
// when the schedule has no retention (or is gone). The garbage collector
// does not expire by TTL a backup a rule keeps.
func KeptBySchedule(ctx context.Context, c client.Client, b *salvorv1.Backup) ([]string, error) {
	name := b.Labels[salvorv1.ScheduleNameLabel]
	if name == "" || b.Annotations[salvorv1.SyncedAnnotation] != "" {
		return nil, nil
	}
	s := &salvorv1.Schedule{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, s); err != nil || s.Spec.Retention == nil {
		return nil, client.IgnoreNotFound(err)
	}
	timing, err := schedule.Parse(s.Spec.Schedule)
	if err != nil {
		return nil, nil
	}
	list := &salvorv1.BackupList{}
	if err := c.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels{salvorv1.ScheduleNameLabel: s.Name}); err != nil {
		return nil, err
	}
	for _, d := range retention.Decide(*s.Spec.Retention, retention.ByLocation(list.Items)[b.Spec.StorageLocation], timing.Zone) {
		if d.Name == b.Name {
			return d.KeptBy, nil
		}
	}
	return nil, nil
}

// observeLastSuccess sets the schedule's last-success metric: the end of
// its newest Completed backup, or the schedule's creation while it has
// none, so that "no good backup for a day" fires for a schedule that never
// made one too.
func observeLastSuccess(s *salvorv1.Schedule, backups []salvorv1.Backup) {
	last := s.CreationTimestamp.Time
	for _, b := range backups {
		if b.Status.Phase == salvorv1.BackupPhaseCompleted && b.Status.CompletionTimestamp != nil && b.Status.CompletionTimestamp.After(last) {
			last = b.Status.CompletionTimestamp.Time
		}
	}
	metrics.ScheduleLastSuccess.WithLabelValues(s.Namespace, s.Name).Set(float64(last.UnixNano()) / 1e9)
}

func (r *ScheduleReconciler) writeStatus(ctx context.Context, s *salvorv1.Schedule, before *salvorv1.ScheduleStatus) error {
	if equalStatus(before, &s.Status) {
		return nil
	}
	// A conflict sends the schedule round again; the run it made is found
	// again by its name.
	return r.Client.Status().Update(ctx, s)
}

func equalStatus(a, b *salvorv1.ScheduleStatus) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// validate returns what is wrong with a schedule, and the template fields
// it ignores.
func (r *ScheduleReconciler) validate(ctx context.Context, s *salvorv1.Schedule) (problems, ignored []string, err error) {
	extra, err := unknownFields(ctx, r.APIReader, s, salvorv1.BackupSpec{}, "spec", "template")
	if err != nil {
		return nil, nil, err
	}
	if len(s.Name) > maxScheduleName {
		problems = append(problems, fmt.Sprintf("schedule name %q is %d characters: at most %d, so that its backups' names (name-YYYYMMDDhhmmss) fit in a label",
			s.Name, len(s.Name), maxScheduleName))
	}
	if _, err := schedule.Parse(s.Spec.Schedule); err != nil {
		problems = append(problems, "spec.schedule: "+err.Error())
	}
	switch s.Spec.ConcurrencyPolicy {
	case "", salvorv1.ConcurrencyForbid, salvorv1.ConcurrencyAllow, salvorv1.ConcurrencyReplace:
	default:
		problems = append(problems, fmt.Sprintf("spec.concurrencyPolicy %q: must be Forbid, Allow or Replace", s.Spec.ConcurrencyPolicy))
	}
	for field, d := range map[string]time.Duration{"jitter": s.Spec.Jitter.Duration, "startingDeadline": s.Spec.StartingDeadline.Duration} {
		if d < 0 {
			problems = append(problems, fmt.Sprintf("spec.%s %s: must not be negative", field, d))
		}
	}
	if v := s.Spec.Verify; v != nil {
		if v.Every < 1 {
			problems = append(problems, fmt.Sprintf("spec.verify.every %d: must be at least 1 (1 verifies every backup)", v.Every))
		}
		if v.RestoreIntoPrefix != "" {
			if errs := validation.IsDNS1123Label(v.RestoreIntoPrefix); len(errs) > 0 {
				problems = append(problems, fmt.Sprintf("spec.verify.restoreIntoPrefix %q: %s", v.RestoreIntoPrefix, strings.Join(errs, "; ")))
			}
		}
	}
	if p := s.Spec.Retention; p != nil {
		for field, n := range map[string]int{"keepLast": p.KeepLast, "hourly": p.Hourly, "daily": p.Daily, "weekly": p.Weekly, "monthly": p.Monthly, "yearly": p.Yearly} {
			if n < 0 {
				problems = append(problems, fmt.Sprintf("spec.retention.%s %d: must not be negative", field, n))
			}
		}
		if p.KeepFailed != nil && *p.KeepFailed < 0 {
			problems = append(problems, fmt.Sprintf("spec.retention.keepFailed %d: must not be negative", *p.KeepFailed))
		}
	}
	templateProblems, _, _, err := validateSpec(ctx, r.Discovery, r.Locations, r.APIReader, s.Spec.Template)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range templateProblems {
		problems = append(problems, "spec.template: "+p)
	}
	// A schedule's template has Velero's metadata: its labels go on the
	// backups, the rest is ignored.
	meta, _ := extra["metadata"].(map[string]any)
	delete(extra, "metadata")
	refused, ignored := judgeUnknown(extra, backupRefused, "spec.template.")
	problems = append(problems, refused...)
	if len(meta) > 1 || (len(meta) == 1 && meta["labels"] == nil) {
		ignored = append(ignored, "metadata (only metadata.labels is used)")
		sort.Strings(ignored)
	}
	return problems, ignored, nil
}

// templateLabels are the labels the template's metadata gives its backups
// (Velero's spec.template.metadata.labels).
func (r *ScheduleReconciler) templateLabels(ctx context.Context, s *salvorv1.Schedule) (map[string]string, error) {
	extra, err := unknownFields(ctx, r.APIReader, s, salvorv1.BackupSpec{}, "spec", "template")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if m, ok := extra["metadata"].(map[string]any); ok {
		if l, ok := m["labels"].(map[string]any); ok {
			for k, v := range l {
				if s, ok := v.(string); ok {
					out[k] = s
				}
			}
		}
	}
	return out, nil
}
