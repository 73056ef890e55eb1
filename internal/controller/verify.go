package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/salvor-dev/salvor/internal/csi"
	"github.com/salvor-dev/salvor/internal/datamover"
	"github.com/salvor-dev/salvor/internal/metrics"
	"github.com/salvor-dev/salvor/internal/restore"
	"github.com/salvor-dev/salvor/internal/verify"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// VerifyReconciler answers verification requests (VerifyAnnotation on a
// Backup): it checks the backup's objects in its location (verify.Check)
// and, when a prefix is asked for, runs a test restore — a Restore it owns,
// into <prefix>-<namespace> — compares it with the backup and deletes what
// it restored. Each step is recorded in status.verification, so a server
// restart picks up where it was.
type VerifyReconciler struct {
	Client client.Client
	// APIReader reads the Backup uncached: a verification's steps are
	// recorded in its status, and a stale copy would repeat one.
	APIReader client.Reader
	Locations *Locations
	Dynamic   dynamic.Interface
	// MovedData opens the repositories moved volume data is in, to check
	// a backup's (nil: moved data is not checked, and says so).
	MovedData *datamover.Repositories
	Log       *slog.Logger
}

// SetupWithManager registers the reconciler: Backups with a request, and
// the test Restores they own.
func (r *VerifyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	asked := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetAnnotations()[salvorv1.VerifyAnnotation] != "" })
	return ctrl.NewControllerManagedBy(mgr).Named("verify").
		For(&salvorv1.Backup{}, builder.WithPredicates(asked)).
		Owns(&salvorv1.Restore{}).
		Complete(r)
}

func (r *VerifyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &salvorv1.Backup{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	request := b.Annotations[salvorv1.VerifyAnnotation]
	v := b.Status.Verification
	// A verification under way is finished even once the backup is
	// deleted (its deletion waits for it, and a test restore's namespaces
	// are removed); none is started then.
	inProgress := v != nil && v.Request == request && v.Phase == salvorv1.VerificationPhaseInProgress
	if request == "" || (b.DeletionTimestamp != nil && !inProgress) || (v != nil && v.Request == request && !inProgress) {
		return ctrl.Result{}, nil
	}
	if errs := validation.IsDNS1123Label(request); len(errs) > 0 || len(request) > 20 {
		now := metav1.Now()
		v = &salvorv1.BackupVerification{Request: request, StartTimestamp: &now}
		return ctrl.Result{}, r.finish(ctx, b, v, fmt.Sprintf("annotation %s: %q is not a request ID (at most 20 lowercase letters and digits); salvor backup verify makes one", salvorv1.VerifyAnnotation, request))
	}
	switch b.Status.Phase {
	case salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed:
	case salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseFailedValidation, salvorv1.BackupPhaseDeleting:
		now := metav1.Now()
		v = &salvorv1.BackupVerification{Request: request, StartTimestamp: &now}
		return ctrl.Result{}, r.finish(ctx, b, v, fmt.Sprintf("backup %s is %s: only a whole backup (Completed or PartiallyFailed) can be verified", b.Name, b.Status.Phase))
	default:
		return ctrl.Result{}, nil // not ended yet: its status change brings it back
	}
	if v == nil || v.Request != request {
		now := metav1.Now()
		v = &salvorv1.BackupVerification{Request: request, Phase: salvorv1.VerificationPhaseInProgress, StartTimestamp: &now}
		if err := r.record(ctx, b, v); err != nil {
			return ctrl.Result{}, err
		}
		r.Log.Info("verifying backup", "backup", req.String(), "request", request)
	}
	prefix := b.Annotations[salvorv1.VerifyPrefixAnnotation]
	if v.Objects == nil {
		store, err := r.Locations.StoreNamed(ctx, b.Spec.StorageLocation)
		if err != nil {
			return ctrl.Result{}, r.finish(ctx, b, v, fmt.Sprintf("backup %s: %v", b.Name, err))
		}
		rep, err := verify.Check(ctx, store, b.Name, ownUID(b))
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("verifying backup %s in location %s: %w", b.Name, b.Spec.StorageLocation, err)
		}
		if _, _, failure := judgeAuthentication(b, rep.Authentication); failure != "" {
			rep.Failures = append(rep.Failures, failure)
		}
		if err := r.checkVolumes(ctx, b, rep); err != nil {
			return ctrl.Result{}, fmt.Errorf("verifying backup %s: %w", b.Name, err)
		}
		rep.Finish()
		v.Manifest, v.Objects, v.Items, v.Failures, v.Volumes = rep.Manifest, rep.Objects, rep.Items, rep.Failures, rep.VolumeResults
		if v.Objects == nil {
			v.Objects = []salvorv1.VerifiedObject{}
		}
		v.Authentication = rep.Authentication.Status()
		v.Message = "checked " + rep.Checked + "; " + volumesChecked(v.Volumes)
		if prefix == "" || !rep.Passed() {
			if prefix != "" {
				v.Message += "; the test restore was not run: the backup's objects failed verification"
			}
			return ctrl.Result{}, r.finish(ctx, b, v, "")
		}
		if err := r.record(ctx, b, v); err != nil {
			return ctrl.Result{}, err
		}
	}
	return r.testRestore(ctx, b, v, prefix)
}

// testRestore moves a test restore on by one step: start it, or, once its
// Restore has ended, compare and clean up. The location is read only for
// those two steps, not at each change of the Restore in between.
func (r *VerifyReconciler) testRestore(ctx context.Context, b *salvorv1.Backup, v *salvorv1.BackupVerification, prefix string) (ctrl.Result, error) {
	tr := v.TestRestore
	if tr == nil {
		return ctrl.Result{}, r.startTestRestore(ctx, b, v, prefix)
	}
	rs := &salvorv1.Restore{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: tr.Restore}, rs); err != nil {
		if apierrors.IsNotFound(err) {
			tr.Message = "the test restore " + tr.Restore + " was deleted before it ended"
			tr.CleanedUp = len(verify.Cleanup(ctx, r.Client, tr.Restore, tr.Namespaces)) == 0
			return ctrl.Result{}, r.finish(ctx, b, v, "")
		}
		return ctrl.Result{}, err
	}
	if !rs.Status.Phase.Ended() {
		return ctrl.Result{}, nil // the Restore's changes bring it back
	}
	tr.RestorePhase = string(rs.Status.Phase)
	var problems []string
	if rs.Status.Phase == salvorv1.RestorePhaseCompleted || rs.Status.Phase == salvorv1.RestorePhasePartiallyFailed {
		cmp, err := r.compare(ctx, b, rs)
		if err != nil {
			problems = append(problems, err.Error())
		}
		if cmp != nil {
			tr.Compared, tr.Identical, tr.NotRestored, tr.Differing, tr.Neutralized = cmp.Compared, cmp.Identical, cmp.NotRestored, cmp.Differing, cmp.Neutralized
		}
	}
	left := verify.Cleanup(ctx, r.Client, rs.Name, tr.Namespaces)
	tr.CleanedUp = len(left) == 0
	problems = append(problems, left...)
	tr.Message = strings.Join(problems, "; ")
	return ctrl.Result{}, r.finish(ctx, b, v, "")
}

// startTestRestore reads which namespaces the backup holds, checks the
// test restore may run, and creates its Restore.
func (r *VerifyReconciler) startTestRestore(ctx context.Context, b *salvorv1.Backup, v *salvorv1.BackupVerification, prefix string) error {
	store, err := r.Locations.StoreNamed(ctx, b.Spec.StorageLocation)
	if err != nil {
		return r.finish(ctx, b, v, fmt.Sprintf("test restore of backup %s: %v", b.Name, err))
	}
	list, err := store.GetResourceList(ctx, b.Name)
	if err != nil {
		return r.finish(ctx, b, v, fmt.Sprintf("test restore of backup %s: reading its resource list: %v", b.Name, err))
	}
	mapping, err := verify.Targets(list, prefix)
	if err != nil {
		return r.finish(ctx, b, v, "test restore: "+err.Error())
	}
	tr := &salvorv1.TestRestoreOutcome{Prefix: prefix, Namespaces: verify.SortedValues(mapping)}
	v.TestRestore = tr
	if len(mapping) == 0 {
		tr.Message = "the backup holds no namespaced items: nothing to test-restore"
		return r.finish(ctx, b, v, "")
	}
	if msg := r.mayTestRestore(ctx, tr.Namespaces); msg != "" {
		return r.finish(ctx, b, v, msg)
	}
	rs := r.testRestoreOf(b, v.Request, mapping)
	if err := r.Client.Create(ctx, rs); err != nil {
		// Made by an attempt that stopped before recording it: the same
		// request gives the same name; it is taken over only if it is
		// this backup's.
		existing := &salvorv1.Restore{}
		if !apierrors.IsAlreadyExists(err) || r.APIReader.Get(ctx, client.ObjectKeyFromObject(rs), existing) != nil ||
			existing.Labels[salvorv1.TestRestoreLabel] != salvorv1.LabelValue(b.Name) || !metav1.IsControlledBy(existing, b) {
			return fmt.Errorf("creating the test restore %s of backup %s: %w", rs.Name, b.Name, err)
		}
	}
	tr.Restore = rs.Name
	r.Log.Info("test restore started", "backup", b.Name, "restore", rs.Name, "namespaces", tr.Namespaces)
	return r.record(ctx, b, v)
}

// compare reads the backup's tarball and compares it with what the ended
// test restore made, through the Restore's own namespace mapping.
func (r *VerifyReconciler) compare(ctx context.Context, b *salvorv1.Backup, rs *salvorv1.Restore) (*verify.Comparison, error) {
	store, err := r.Locations.StoreNamed(ctx, b.Spec.StorageLocation)
	if err != nil {
		return nil, fmt.Errorf("reading the backup's tarball to compare: %w", err)
	}
	tarball, err := store.GetTarball(ctx, b.Name)
	if err != nil {
		return nil, fmt.Errorf("reading the backup's tarball to compare: %w", err)
	}
	defer tarball.Close()
	// The test restore changed storage classes and images as mapped: so does the
	// comparison.
	mappings, problems, err := restore.LoadMappings(ctx, r.Dynamic, rs.Namespace)
	if err == nil && len(problems) > 0 {
		err = errors.New(strings.Join(problems, "; "))
	}
	if err != nil {
		return nil, err
	}
	cmp, err := verify.Compare(ctx, r.Dynamic, tarball, b.Name, rs.Name, rs.Spec.NamespaceMapping, mappings)
	if err != nil {
		err = fmt.Errorf("comparing the restored objects with the backup: %w", err)
	}
	return cmp, err
}

// mayTestRestore refuses a test restore that could touch what it did not
// make, or could not clean up after itself: a target namespace that
// exists already, or a server that may not delete namespaces.
func (r *VerifyReconciler) mayTestRestore(ctx context.Context, targets []string) string {
	for _, ns := range targets {
		err := r.Client.Get(ctx, client.ObjectKey{Name: ns}, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}})
		if err == nil {
			return fmt.Sprintf("test restore refused: namespace %s exists; a test restore restores only into namespaces it makes (choose another prefix, or delete it)", ns)
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Sprintf("test restore refused: reading namespace %s: %v", ns, err)
		}
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Resource: "namespaces"}}}
	if err := r.Client.Create(ctx, review); err != nil {
		return fmt.Sprintf("test restore refused: asking whether the server may delete namespaces: %v", err)
	}
	if !review.Status.Allowed {
		return "test restore refused: the server may not delete namespaces, which it needs to remove what a test restore made; install it with `salvor install --test-restores` (Helm: testRestores.enabled=true)"
	}
	return ""
}

// testRestoreOf is the Restore a test restore runs: every namespace of the
// backup mapped to its target, nothing cluster-scoped, no volumes, owned
// by the Backup (so it goes with it).
func (r *VerifyReconciler) testRestoreOf(b *salvorv1.Backup, request string, mapping map[string]string) *salvorv1.Restore {
	var namespaces []string
	for ns := range mapping {
		namespaces = append(namespaces, ns)
	}
	slices.Sort(namespaces)
	no := false
	rs := &salvorv1.Restore{
		ObjectMeta: metav1.ObjectMeta{
			// The name labels every restored object: at most 63 characters.
			Namespace: b.Namespace, Name: salvorv1.SuffixedName(b.Name, "-verify-"+request, 63),
			Labels: map[string]string{salvorv1.TestRestoreLabel: salvorv1.LabelValue(b.Name)},
		},
		Spec: salvorv1.RestoreSpec{
			BackupName: b.Name, IncludedNamespaces: namespaces, NamespaceMapping: mapping,
			IncludeClusterResources: &no, RestorePVs: &no,
			ExistingResourcePolicy: salvorv1.ExistingResourcePolicyNone,
		},
	}
	_ = controllerutil.SetControllerReference(b, rs, r.Client.Scheme())
	return rs
}

// finish ends a verification: Failed when anything failed (or failMsg
// says why it could not be done), Passed otherwise.
func (r *VerifyReconciler) finish(ctx context.Context, b *salvorv1.Backup, v *salvorv1.BackupVerification, failMsg string) error {
	now := metav1.Now()
	v.CompletionTimestamp = &now
	v.Phase = salvorv1.VerificationPhasePassed
	if failMsg != "" {
		v.Failures = append(v.Failures, failMsg)
	}
	if tr := v.TestRestore; tr != nil && (tr.Restore != "" && (tr.RestorePhase != string(salvorv1.RestorePhaseCompleted) || len(tr.Differing) > 0 || !tr.CleanedUp || tr.Message != "")) {
		v.Failures = append(v.Failures, "test restore "+tr.Restore+": "+testRestoreFailure(tr))
	}
	if len(v.Failures) > 0 {
		v.Phase = salvorv1.VerificationPhaseFailed
	}
	kind := "integrity"
	if b.Annotations[salvorv1.VerifyPrefixAnnotation] != "" {
		kind = "test-restore"
	}
	metrics.Verifications.WithLabelValues(string(v.Phase), kind).Inc()
	r.Log.Info("backup verified", "backup", b.Namespace+"/"+b.Name, "outcome", v.Phase, "failures", len(v.Failures))
	return r.record(ctx, b, v)
}

func testRestoreFailure(tr *salvorv1.TestRestoreOutcome) string {
	var why []string
	if tr.RestorePhase != string(salvorv1.RestorePhaseCompleted) {
		why = append(why, "the restore ended "+tr.RestorePhase)
	}
	if n := len(tr.Differing); n > 0 {
		why = append(why, fmt.Sprintf("%d restored objects differ from the backup", n))
	}
	if !tr.CleanedUp {
		why = append(why, "what it restored was not all deleted")
	}
	if tr.Message != "" {
		why = append(why, tr.Message)
	}
	return strings.Join(why, "; ")
}

// record writes status.verification alone: the other controllers own the
// rest of the status.
func (r *VerifyReconciler) record(ctx context.Context, b *salvorv1.Backup, v *salvorv1.BackupVerification) error {
	b.Status.Verification = v
	return writeStatus(ctx, r.Client, b, func(dst, src *salvorv1.Backup) { dst.Status.Verification = src.Status.Verification })
}

// checkVolumes checks the data of each volume the backup keeps outside
// its objects, where that data is: moved data in its location's kopia
// repository (found as a restore finds it, and walked), a CSI snapshot's
// VolumeSnapshotContent in this cluster (there and ready). A
// VolumeSnapshotter's snapshot cannot be checked — the plugin API has no
// call that reads one — and says so. An error is returned only when the
// cluster could not be asked (to try again).
func (r *VerifyReconciler) checkVolumes(ctx context.Context, b *salvorv1.Backup, rep *verify.Report) error {
	var contents map[string]map[string]any // by snapshot handle
	var listErr error
	var bsl *salvorv1.BackupStorageLocation // read once, for the first moved volume
	for _, v := range rep.Volumes {
		switch v.Kind {
		case verify.MovedData:
			if r.MovedData == nil {
				rep.Volume(v, salvorv1.ObjectUnchecked, "this server does not read moved data")
				continue
			}
			if bsl == nil {
				var err error
				if bsl, err = r.Locations.Get(ctx, b.Spec.StorageLocation); err != nil {
					return err
				}
			}
			src := datamover.MovedSource(v.Namespace, v.Claim, v.DataUpload, salvorv1.LabelValue(b.Name))
			snap, err := r.MovedData.Check(ctx, bsl, v.Namespace, src)
			switch {
			case err == nil:
				rep.Volume(v, salvorv1.ObjectOK, fmt.Sprintf("kopia snapshot %s in location %s, %d bytes, walked: every content in a pack the location holds", snap.ID, bsl.Name, snap.TotalBytes))
			case ctx.Err() != nil:
				return ctx.Err()
			case errors.As(err, new(*datamover.MaintenanceRunningError)):
				return err // checked again once the repository's maintenance has ended
			default:
				rep.Volume(v, salvorv1.ObjectMissing, fmt.Sprintf("location %s: %v", bsl.Name, err))
			}
		case verify.CSISnapshot:
			if contents == nil {
				contents = map[string]map[string]any{}
				list, err := r.Dynamic.Resource(csi.ContentGVR).List(ctx, metav1.ListOptions{})
				switch {
				case ctx.Err() != nil:
					return ctx.Err()
				case err != nil && !apierrors.IsNotFound(err):
					listErr = err
				case err == nil:
					for _, c := range list.Items {
						if h, _, _ := unstructured.NestedString(c.Object, "status", "snapshotHandle"); h != "" {
							contents[h] = c.Object
						}
					}
				}
			}
			if listErr != nil {
				rep.Volume(v, salvorv1.ObjectUnchecked, fmt.Sprintf("this cluster's VolumeSnapshotContents could not be listed: %v", listErr))
				continue
			}
			c, ok := contents[v.Handle]
			ready, _, _ := unstructured.NestedBool(c, "status", "readyToUse")
			switch {
			case ok && ready:
				name, _, _ := unstructured.NestedString(c, "metadata", "name")
				rep.Volume(v, salvorv1.ObjectOK, fmt.Sprintf("VolumeSnapshotContent %s holds snapshot %s of driver %s, ready to use", name, v.Handle, v.Driver))
			case ok:
				name, _, _ := unstructured.NestedString(c, "metadata", "name")
				rep.Volume(v, salvorv1.ObjectMissing, fmt.Sprintf("VolumeSnapshotContent %s holds snapshot %s but is not ready to use", name, v.Handle))
			default:
				// Gone from the cluster (deleted, or a backup synced from
				// another): a restore makes a content from the handle, which
				// works if the storage still holds it — which only the
				// driver knows, and no Kubernetes API asks it.
				rep.Volume(v, salvorv1.ObjectUnchecked, fmt.Sprintf("no VolumeSnapshotContent in this cluster holds snapshot %s; driver %s's storage was not asked whether it still does", v.Handle, v.Driver))
			}
		default:
			rep.Volume(v, salvorv1.ObjectUnchecked, fmt.Sprintf("snapshot %s in volume snapshot location %s: the VolumeSnapshotter plugin API has no call that reads a snapshot, so only a restore shows it is there", v.SnapshotID, v.Location))
		}
	}
	return nil
}

// volumesChecked says in words what became of the volumes' data checks.
func volumesChecked(volumes []salvorv1.VerifiedVolume) string {
	if len(volumes) == 0 {
		return "the backup keeps no volume data outside its objects"
	}
	counts := map[string]int{}
	for _, v := range volumes {
		counts[v.Result]++
	}
	s := fmt.Sprintf("of the %d volumes whose data the backup keeps in snapshots or moved data, %d were found (ok), %d missing, %d not checked",
		len(volumes), counts[salvorv1.ObjectOK], counts[salvorv1.ObjectMissing], counts[salvorv1.ObjectUnchecked])
	if counts[salvorv1.ObjectUnchecked] > 0 {
		s += " (the Volumes table says why)"
	}
	return s
}
