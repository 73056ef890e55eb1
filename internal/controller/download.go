package controller

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/persistence"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// DownloadReconciler answers DownloadRequests with signed URLs, and removes
// requests an hour after they were answered.
type DownloadReconciler struct {
	Client    client.Client
	Locations *Locations
	Log       *slog.Logger
	// TTL is how long a URL is valid (default 10m).
	TTL time.Duration
}

// SetupWithManager registers the reconciler.
func (r *DownloadReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.TTL <= 0 {
		r.TTL = 10 * time.Minute
	}
	return ctrl.NewControllerManagedBy(mgr).For(&salvorv1.DownloadRequest{}).Named("downloadrequest").Complete(r)
}

var downloadFiles = map[salvorv1.DownloadTargetKind]persistence.File{
	salvorv1.DownloadTargetBackupLog:            persistence.LogFile,
	salvorv1.DownloadTargetBackupResults:        persistence.ResultsFile,
	salvorv1.DownloadTargetBackupResourceList:   persistence.ResourceListFile,
	salvorv1.DownloadTargetBackupItemOperations: persistence.ItemOperationsFile,
	salvorv1.DownloadTargetBackupContents:       persistence.TarballFile,
}

func (r *DownloadReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	d := &salvorv1.DownloadRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if d.Status.Phase == salvorv1.DownloadRequestPhaseProcessed || d.Status.Phase == salvorv1.DownloadRequestPhaseFailed {
		if left := time.Until(d.CreationTimestamp.Add(time.Hour)); left > 0 {
			return ctrl.Result{RequeueAfter: left}, nil
		}
		return ctrl.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, d))
	}
	url, encrypted, err := r.sign(ctx, d)
	if err != nil {
		d.Status.Phase, d.Status.Message = salvorv1.DownloadRequestPhaseFailed, err.Error()
	} else {
		exp := metav1.NewTime(time.Now().Add(r.TTL))
		d.Status.Phase, d.Status.DownloadURL, d.Status.Expiration = salvorv1.DownloadRequestPhaseProcessed, url, &exp
		d.Status.Encrypted = encrypted
	}
	if err := r.Client.Status().Update(ctx, d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{RequeueAfter: time.Hour}, nil
}

var restoreFiles = map[salvorv1.DownloadTargetKind]persistence.File{
	salvorv1.DownloadTargetRestoreLog:          persistence.LogFile,
	salvorv1.DownloadTargetRestoreResults:      persistence.ResultsFile,
	salvorv1.DownloadTargetRestoreOperations:   persistence.ItemOperationsFile,
	salvorv1.DownloadTargetRestoreResourceList: persistence.ResourceListFile,
}

// sign answers with a URL of the file asked for — for an encrypted
// location, of a copy encrypted to the client's key (encrypted true).
func (r *DownloadReconciler) sign(ctx context.Context, d *salvorv1.DownloadRequest) (url string, encrypted bool, err error) {
	store, key, err := r.locate(ctx, d)
	if err != nil {
		return "", false, err
	}
	if !store.Encrypted() {
		url, err := store.SignedKeyURL(ctx, key, r.TTL)
		return url, false, err
	}
	if d.Spec.Recipient == "" {
		return "", false, fmt.Errorf("%s is in an encrypted location: only the server can read it, and serves it encrypted to the key in spec.recipient, which this request lacks (a salvor CLI of this version sets it)", key)
	}
	if err := store.SweepDownloads(ctx, time.Now()); err != nil {
		r.Log.Warn("removing expired download copies", "error", err)
	}
	url, err = store.SealedCopyURL(ctx, key, d.Spec.Recipient, string(d.UID), r.TTL)
	return url, true, err
}

// locate finds the store and key of the file a request asks for.
func (r *DownloadReconciler) locate(ctx context.Context, d *salvorv1.DownloadRequest) (*persistence.BackupStore, string, error) {
	if file, ok := restoreFiles[d.Spec.Target.Kind]; ok {
		rs := &salvorv1.Restore{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.Target.Name}, rs); err != nil {
			return nil, "", fmt.Errorf("restore %s: %w", d.Spec.Target.Name, err)
		}
		// The restore's files are in its backup's location, which the
		// restore records; its backup may be deleted since.
		location := rs.Labels[salvorv1.LocationLabel]
		if location == "" {
			b := &salvorv1.Backup{}
			if err := r.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: rs.Spec.BackupName}, b); err != nil {
				return nil, "", fmt.Errorf("restore %s records no location, and its backup %s cannot say which: %w", rs.Name, rs.Spec.BackupName, err)
			}
			location = b.Spec.StorageLocation
		}
		bsl, err := r.Locations.Get(ctx, location)
		if err != nil {
			return nil, "", fmt.Errorf("the location of restore %s: %w", rs.Name, err)
		}
		store, err := r.Locations.Store(ctx, bsl)
		if err != nil {
			return nil, "", err
		}
		return store, store.RestoreFile(rs.Name, file), nil
	}
	file, ok := downloadFiles[d.Spec.Target.Kind]
	if !ok {
		return nil, "", fmt.Errorf("target kind %q is not one the server serves", d.Spec.Target.Kind)
	}
	b := &salvorv1.Backup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.Target.Name}, b); err != nil {
		return nil, "", fmt.Errorf("backup %s: %w", d.Spec.Target.Name, err)
	}
	store, err := r.Locations.StoreNamed(ctx, b.Spec.StorageLocation)
	if err != nil {
		return nil, "", err
	}
	return store, store.BackupFile(b.Name, file), nil
}
