package controller

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/salvor-dev/salvor/internal/metrics"
	"github.com/salvor-dev/salvor/internal/persistence"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// LocationReconciler checks that locations can be reached and hold only
// backups, and syncs backups found in them into the cluster — so a new
// cluster pointed at an old location sees its backups.
type LocationReconciler struct {
	Client    client.Client
	Locations *Locations
	Log       *slog.Logger
	// Interval is how often each location is checked (default 1m).
	Interval time.Duration
	// SyncPeriod is backupSyncPeriod for locations that leave it out (the
	// server's --backup-sync-period, Velero's); nil syncs at every check.
	SyncPeriod *metav1.Duration
}

// SetupWithManager registers the reconciler.
func (r *LocationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Interval <= 0 {
		r.Interval = time.Minute
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&salvorv1.BackupStorageLocation{}, builder.WithPredicates(locationChanges)).
		Named("backupstoragelocation").
		Complete(r)
}

// locationChanges are the events that check a location before its next
// check is due: it was made or deleted, its spec changed, or an annotation
// asks for something (a key rotation). Its own status update is not one:
// every check writes lastValidationTime, so reacting to it checked (and
// synced) each location again at once, doubling its requests to the store
// and chaining checks that straddled a second.
var locationChanges = predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{})

// locationNameProblem says why no backup can be stored in a location of
// this name, "" when one can: its name labels the backups stored in it.
func locationNameProblem(name string) string {
	if n := len(name); n > validation.LabelValueMaxLength {
		return fmt.Sprintf("location name %q has %d characters: at most %d, for it labels the backups stored in it (%s); create the location under a shorter name",
			name, n, validation.LabelValueMaxLength, salvorv1.LocationLabel)
	}
	return ""
}

func (r *LocationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	bsl := &salvorv1.BackupStorageLocation{}
	if err := r.Client.Get(ctx, req.NamespacedName, bsl); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone: its series would otherwise say "unavailable" or "no
			// good backup" forever.
			metrics.LocationAvailable.DeleteLabelValues(req.Name)
			metrics.LocationLastSuccess.DeleteLabelValues(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if msg := locationNameProblem(bsl.Name); msg != "" {
		if bsl.Status.Phase != salvorv1.BackupStorageLocationPhaseUnavailable || bsl.Status.Message != msg {
			bsl.Status.Phase, bsl.Status.Message = salvorv1.BackupStorageLocationPhaseUnavailable, msg
			return ctrl.Result{}, client.IgnoreNotFound(r.Client.Status().Update(ctx, bsl))
		}
		return ctrl.Result{}, nil
	}
	checkCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	phase, message := salvorv1.BackupStorageLocationPhaseAvailable, ""
	var notes []string
	if bsl.Spec.Encryption != nil {
		note, err := r.keys(checkCtx, bsl)
		if err != nil {
			return ctrl.Result{}, err
		}
		notes = append(notes, note...)
	}
	store, err := r.Locations.Store(checkCtx, bsl)
	if err == nil {
		err = store.Check(checkCtx)
	}
	now := metav1.Now()
	if err != nil {
		phase, message = salvorv1.BackupStorageLocationPhaseUnavailable, err.Error()
	} else if !syncDue(bsl, now.Time, r.SyncPeriod) {
		// Not yet (spec.backupSyncPeriod), or never (zero).
	} else if unreadable, err := r.sync(checkCtx, bsl); err != nil {
		r.Log.Warn("syncing backups from a location", "location", bsl.Name, "error", err)
	} else {
		bsl.Status.LastSyncedTime = &now
		if n := len(unreadable); n > 0 {
			more := ""
			if n > 5 {
				unreadable, more = unreadable[:5], fmt.Sprintf(" and %d more", n-5)
			}
			notes = append(notes, fmt.Sprintf("%d backups in the location cannot be synced: %s%s", n, strings.Join(unreadable, "; "), more))
		}
	}
	if message == "" {
		message = strings.Join(notes, "; ")
	}
	if bsl.Status.Phase != phase {
		r.Log.Info("backup storage location changed phase", "location", bsl.Name, "phase", phase, "message", message)
	}
	bsl.Status.Phase, bsl.Status.Message, bsl.Status.LastValidationTime = phase, message, &now
	r.observe(ctx, bsl)
	if err := r.Client.Status().Update(ctx, bsl); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{RequeueAfter: nextCheck(bsl, r.Interval, r.SyncPeriod)}, nil
}

// nextCheck is when to check a location again: at its validationFrequency
// (the server's interval when unset), or sooner when its backupSyncPeriod
// (the server's sync period when unset) is shorter, since a sync follows a
// check; zero when neither asks for one (the location is checked again
// when it changes).
func nextCheck(bsl *salvorv1.BackupStorageLocation, interval time.Duration, syncPeriod *metav1.Duration) time.Duration {
	next := interval
	if f := bsl.Spec.ValidationFrequency; f != nil {
		next = f.Duration
	}
	if p := cmp.Or(bsl.Spec.BackupSyncPeriod, syncPeriod); p != nil && p.Duration > 0 && (next <= 0 || p.Duration < next) {
		next = p.Duration
	}
	return max(next, 0)
}

// syncDue says whether a check at now also syncs the location's backups:
// always without a backupSyncPeriod (the location's, else the server's),
// never with a zero one, else once the period has passed since the last
// sync (a second early counts: checks are requeued at the period and land
// a moment before or after it).
func syncDue(bsl *salvorv1.BackupStorageLocation, now time.Time, syncPeriod *metav1.Duration) bool {
	p := cmp.Or(bsl.Spec.BackupSyncPeriod, syncPeriod)
	switch {
	case p == nil:
		return true
	case p.Duration <= 0:
		return false
	case bsl.Status.LastSyncedTime == nil:
		return true
	}
	return now.Sub(bsl.Status.LastSyncedTime.Time) >= p.Duration-time.Second
}

// sync creates in the cluster the backups the location holds that the
// cluster lacks, keeps the synced ones' unfinished phases up to date, and
// removes the synced ones the location no longer holds.
// It returns the backups it could not read, saying why.
func (r *LocationReconciler) sync(ctx context.Context, bsl *salvorv1.BackupStorageLocation) (unreadable []string, err error) {
	store, err := r.Locations.Store(ctx, bsl)
	if err != nil {
		return nil, err
	}
	names, invalid, err := store.Backups(ctx)
	if err != nil {
		return nil, err
	}
	// A problem with one backup is said and the others are synced: a
	// backup no object can stand for must not hold back the rest.
	skip := func(name string, err error) {
		r.Log.Warn("a backup in the location is not synced", "location", bsl.Name, "backup", name, "error", err)
		unreadable = append(unreadable, fmt.Sprintf("%s: %v", name, err))
	}
	for _, name := range invalid {
		skip(name, fmt.Errorf("not a name a Backup can have (lower-case letters, digits, '-' and '.'); left as it is"))
	}
	existing := &salvorv1.BackupList{}
	if err := r.Client.List(ctx, existing, client.InNamespace(bsl.Namespace)); err != nil {
		return nil, err
	}
	have := map[string]*salvorv1.Backup{}
	for i := range existing.Items {
		have[existing.Items[i].Name] = &existing.Items[i]
	}
	for _, name := range names {
		if b := have[name]; b != nil {
			// A synced backup whose status was not written yet (the server
			// stopped in between) gets it now, and one its writer has not
			// finished (Velero uploads a backup waiting for its operations,
			// and again when it ends) follows what the writer stores.
			if b.Annotations[salvorv1.SyncedAnnotation] != "" && !b.Status.Phase.Ended() {
				if stored, err := store.GetBackup(ctx, name); err == nil && syncedStatus(stored).Phase != b.Status.Phase {
					b.Status = syncedStatus(stored)
					b.Status.Authentication = r.authentication(ctx, store, bsl, name, stored)
					if err := updateStatus(ctx, r.Client, b); err != nil {
						return unreadable, fmt.Errorf("recording synced backup %s: %w", name, err)
					}
					r.Log.Info("a synced backup changed in its location", "location", bsl.Name, "backup", name, "phase", b.Status.Phase)
				}
			}
			continue
		}
		stored, err := store.GetBackup(ctx, name)
		if err != nil {
			skip(name, err)
			continue
		}
		if exp := stored.Status.Expiration; bsl.Spec.ReadOnly() && exp != nil && exp.Time.Before(time.Now()) {
			// Its writer expires it; here it would only be created to be
			// deleted again.
			continue
		}
		b := &salvorv1.Backup{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Namespace:   bsl.Namespace,
				Labels:      map[string]string{salvorv1.LocationLabel: bsl.Name},
				Annotations: map[string]string{salvorv1.SyncedAnnotation: bsl.Name},
				Finalizers:  []string{salvorv1.FilesFinalizer},
			},
			Spec: stored.Spec,
		}
		if uid := string(stored.UID); uid != "" && len(validation.IsValidLabelValue(uid)) == 0 {
			b.Annotations[salvorv1.SyncedUIDAnnotation] = uid
		}
		for k, v := range stored.Labels {
			if _, ok := b.Labels[k]; !ok {
				b.Labels[k] = v
			}
		}
		b.Spec.StorageLocation = bsl.Name
		if err := r.Client.Create(ctx, b); err != nil {
			skip(name, fmt.Errorf("creating its Backup: %w", err))
			continue
		}
		b.Status = syncedStatus(stored)
		b.Status.Authentication = r.authentication(ctx, store, bsl, name, stored)
		if err := updateStatus(ctx, r.Client, b); err != nil {
			return unreadable, fmt.Errorf("recording synced backup %s: %w", name, err)
		}
		r.syncProgressResources(ctx, store, b)
		r.Log.Info("synced a backup from its location", "location", bsl.Name, "backup", name)
	}
	return unreadable, r.dropGone(ctx, bsl, names, have)
}

// dropGone removes the Backup objects synced from the location whose
// backups are no longer there (their writer deleted them). Only the object
// goes: its finalizer is taken off first, so that nothing under its name
// is deleted — a backup written there again under the name is not its own.
func (r *LocationReconciler) dropGone(ctx context.Context, bsl *salvorv1.BackupStorageLocation, names []string, have map[string]*salvorv1.Backup) error {
	for name, b := range have {
		if b.Annotations[salvorv1.SyncedAnnotation] != bsl.Name || b.DeletionTimestamp != nil || slices.Contains(names, name) {
			continue
		}
		patch := client.MergeFrom(b.DeepCopy())
		controllerutil.RemoveFinalizer(b, salvorv1.FilesFinalizer)
		if err := r.Client.Patch(ctx, b, patch); err != nil {
			return client.IgnoreNotFound(err)
		}
		if err := r.Client.Delete(ctx, b); err != nil {
			return client.IgnoreNotFound(err)
		}
		r.Log.Info("a synced backup is gone from its location: its Backup object is removed, nothing in the location is touched", "location", bsl.Name, "backup", name)
	}
	return nil
}

// syncedStatus is the status of a Backup synced from stored metadata: a
// whole backup whose metadata records no phase (an old writer's) is
// Completed.
func syncedStatus(stored *salvorv1.Backup) salvorv1.BackupStatus {
	st := stored.Status
	if st.Phase == "" {
		st.Phase = salvorv1.BackupPhaseCompleted
	}
	// The file's word for it proves nothing: see authentication.
	st.Authentication = nil
	return st
}

// authentication checks a synced backup's signed manifest (its header:
// every restore checks the whole), for the Backup's status.
func (r *LocationReconciler) authentication(ctx context.Context, store *persistence.BackupStore, bsl *salvorv1.BackupStorageLocation, name string, stored *salvorv1.Backup) *salvorv1.BackupAuthentication {
	a, err := store.AuthenticateHeader(ctx, name, string(stored.UID))
	if err != nil {
		return &salvorv1.BackupAuthentication{State: salvorv1.AuthenticationUnauthenticated, Message: fmt.Sprintf("its manifest could not be read when synced: %v", err)}
	}
	if a.State == persistence.Forged {
		r.Log.Warn("a synced backup's manifest is forged: nothing of it will be restored", "location", bsl.Name, "backup", name, "why", a.Message)
	}
	return a.Status()
}

// keys makes sure an encrypted location has its keys, adds one when a
// rotation is asked for, and records them in its status; it returns what
// the location's status should say.
func (r *LocationReconciler) keys(ctx context.Context, bsl *salvorv1.BackupStorageLocation) ([]string, error) {
	var notes []string
	keys, unsaved, err := r.Locations.EncryptionKeys(ctx, bsl)
	if err != nil {
		return []string{err.Error()}, nil
	}
	what := keySecretName(r.Locations.Namespace, bsl.Spec.Encryption.KeySecret)
	if unsaved {
		notes = append(notes, fmt.Sprintf("the server created a new encryption key (%s): keep a copy of the keys outside the cluster — without them the location's backups cannot be read — then remove the Secret's annotation %s", what, salvorv1.KeyNotSavedAnnotation))
	}
	if bsl.Annotations[salvorv1.RotateKeyAnnotation] != "" {
		if keys, err = r.Locations.RotateKey(ctx, bsl); err != nil {
			return nil, err
		}
		r.Log.Info("added a key to an encrypted location", "location", bsl.Name, "secret", what, "keys", keys.Count(), "recipient", keys.Recipient())
		patch := client.MergeFrom(bsl.DeepCopy())
		delete(bsl.Annotations, salvorv1.RotateKeyAnnotation)
		status := bsl.Status
		if err := r.Client.Patch(ctx, bsl, patch); err != nil {
			return nil, err
		}
		bsl.Status = status
	}
	bsl.Status.EncryptionKeys, bsl.Status.EncryptionRecipient = keys.Count(), keys.Recipient()
	return notes, nil
}

// syncProgressResources recreates a synced backup's VolumePluginBackups, so
// the volumes' progress is visible from any cluster that sees the backup.
func (r *LocationReconciler) syncProgressResources(ctx context.Context, store *persistence.BackupStore, b *salvorv1.Backup) {
	var vpbs []salvorv1.VolumePluginBackup
	if err := store.GetBackupJSON(ctx, b.Name, persistence.VolumePluginBackupsFile, &vpbs); err != nil {
		return // a backup without volumes has no such file
	}
	for _, v := range vpbs {
		fresh := &salvorv1.VolumePluginBackup{
			ObjectMeta: metav1.ObjectMeta{Name: v.Name, Namespace: b.Namespace, Labels: v.Labels},
			Spec:       v.Spec,
		}
		if err := r.Client.Create(ctx, fresh); err != nil {
			if !apierrors.IsAlreadyExists(err) {
				r.Log.Warn("syncing a VolumePluginBackup", "backup", b.Name, "name", v.Name, "error", err)
			}
			continue
		}
		fresh.Status = v.Status
		if err := r.Client.Status().Update(ctx, fresh); err != nil {
			r.Log.Warn("syncing a VolumePluginBackup's status", "backup", b.Name, "name", v.Name, "error", err)
		}
	}
}

// observe records the location's availability and its newest good backup.
func (r *LocationReconciler) observe(ctx context.Context, bsl *salvorv1.BackupStorageLocation) {
	available := 0.0
	if bsl.Status.Phase == salvorv1.BackupStorageLocationPhaseAvailable {
		available = 1
	}
	metrics.LocationAvailable.WithLabelValues(bsl.Name).Set(available)
	list := &salvorv1.BackupList{}
	if err := r.Client.List(ctx, list, client.InNamespace(bsl.Namespace), client.MatchingLabels{salvorv1.LocationLabel: bsl.Name}); err != nil {
		return
	}
	var last time.Time
	for _, b := range list.Items {
		if b.Status.Phase == salvorv1.BackupPhaseCompleted && b.Status.CompletionTimestamp != nil && b.Status.CompletionTimestamp.After(last) {
			last = b.Status.CompletionTimestamp.Time
		}
	}
	if !last.IsZero() {
		metrics.LocationLastSuccess.WithLabelValues(bsl.Name).Set(float64(last.UnixNano()) / 1e9)
	}
}
