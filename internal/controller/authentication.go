package controller

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/persistence"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// ownUID is the UID a backup's manifest must name: the Backup's own for a
// backup this cluster ran (a manifest of an older backup of the name is
// not its), none for one synced from its location (its object is new).
func ownUID(b *salvorv1.Backup) string {
	if b.Annotations[salvorv1.SyncedAnnotation] != "" {
		return ""
	}
	return string(b.UID)
}

// judgeAuthentication decides what a restore does with what authenticating
// its backup found: an authenticated backup is trusted (its snapshots, the
// hooks its pods ask for); a forged one, or one recorded as authenticated
// that no longer is (its signature removed), is not restored at all; any
// other is restored with a warning saying what it is not trusted with.
func judgeAuthentication(b *salvorv1.Backup, a persistence.Authentication) (authenticated bool, warning, failure string) {
	switch a.State {
	case persistence.Authenticated:
		return true, "", ""
	case persistence.Forged:
		return false, "", fmt.Sprintf("backup %s failed authentication, so nothing of it is restored: %s", b.Name, a.Message)
	}
	if was := b.Status.Authentication; was != nil && was.State == salvorv1.AuthenticationAuthenticated {
		return false, "", fmt.Sprintf("backup %s was authenticated (%s) but no longer is, so nothing of it is restored: %s", b.Name, was.Message, a.Message)
	}
	return false, fmt.Sprintf("backup %s is not authenticated (%s): whoever can write to its location's bucket could have written it, "+
		"so its snapshots are made into volumes only with --trust-backup-snapshots and its pods' hook annotations run only with --annotation-hooks", b.Name, a.Message), ""
}

// recordAuthentication brings the backup's status up to date when a
// restore authenticated it and its status did not say so (a sync that
// could not read its manifest): the CSI plugin trusts the snapshots of a
// backup whose status says it is authenticated.
func (r *RestoreReconciler) recordAuthentication(ctx context.Context, b *salvorv1.Backup, a persistence.Authentication) {
	if a.State != persistence.Authenticated || (b.Status.Authentication != nil && b.Status.Authentication.State == salvorv1.AuthenticationAuthenticated) {
		return
	}
	patch := client.MergeFrom(b.DeepCopy())
	b.Status.Authentication = a.Status()
	if err := r.Client.Status().Patch(ctx, b, patch); err != nil {
		r.Log.Warn("recording a backup's authentication", "backup", b.Name, "error", err)
	}
}
