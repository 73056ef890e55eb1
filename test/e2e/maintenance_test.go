package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/datamover"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestRepositoryMaintenanceFreesDeletedData: the first upload into a
// namespace's repository records it as a BackupRepository; its
// maintenance runs as Jobs on the testbed node at its frequency, each run
// recorded with the repository's size and snapshots; after the one backup
// of a namespace is deleted, the next runs (safety none) give its volume
// data's space back; where another backup shares the repository, its data
// stays whole through them. Old Jobs are pruned; `salvor repo get`
// shows it; the mover account may report on the repository and no more.
func TestRepositoryMaintenanceFreesDeletedData(t *testing.T) {
	t.Parallel()
	c, csi, minio, node := moverCluster(t, "--repo-maintenance-safety", "none", "--keep-latest-maintenance-jobs", "2")
	ctx := context.Background()
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, csiClaim("app", "data", csi.StorageClass))
	pv := c.boundVolume(t, "app", "data")
	dir := csi.Driver.VolumeDir(pv)
	write := func() {
		b := make([]byte, 8<<20)
		rand.Read(b)
		if err := os.WriteFile(filepath.Join(dir, "big.bin"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write()
	c.mustSalvor(t, "backup", "create", "old", "--include-namespaces", "app", "--snapshot-move-data", "--wait")
	write() // every byte new: the two backups share no data
	c.mustSalvor(t, "backup", "create", "new", "--include-namespaces", "app", "--snapshot-move-data", "--wait")
	for _, name := range []string{"old", "new"} {
		if b := c.getBackup(t, name); b.Status.Phase != salvorv1.BackupPhaseCompleted {
			t.Fatalf("backup %s: %s", name, b.Status.Phase)
		}
	}
	keep := onlyUpload(t, c, "new")
	want := treeSums(t, dir)
	// A namespace whose one backup is deleted: its repository's data goes.
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, csiClaim("gone", "data", csi.StorageClass))
	b := make([]byte, 8<<20)
	rand.Read(b)
	if err := os.WriteFile(filepath.Join(csi.Driver.VolumeDir(c.boundVolume(t, "gone", "data")), "big.bin"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "backup", "create", "gone", "--include-namespaces", "gone", "--snapshot-move-data", "--wait")
	if b := c.getBackup(t, "gone"); b.Status.Phase != salvorv1.BackupPhaseCompleted {
		t.Fatalf("backup gone: %s", b.Status.Phase)
	}

	name := datamover.RepositoryName("primary", "app")
	repo := &salvorv1.BackupRepository{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: name}, repo); err != nil {
		t.Fatalf("no BackupRepository for the uploads' repository: %v", err)
	}
	if repo.Spec.BackupStorageLocation != "primary" || repo.Spec.VolumeNamespace != "app" || repo.Spec.RepositoryType != "kopia" ||
		repo.Spec.MaintenanceFrequency.Duration != time.Hour || repo.Status.LastMaintenanceTime != nil {
		t.Fatalf("BackupRepository %s: %+v %+v", name, repo.Spec, repo.Status)
	}
	// Due at once, and then a second after each run.
	patch := []byte(`{"spec":{"maintenanceFrequency":"1s"}}`)
	goneRepo := &salvorv1.BackupRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: datamover.RepositoryName("primary", "gone")}}
	for _, r := range []*salvorv1.BackupRepository{repo, goneRepo} {
		if err := c.client.Patch(ctx, r, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	var goneBefore int64
	eventually(t, "a maintenance run measuring the other namespace's data", 2*time.Minute, func() (bool, string) {
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(goneRepo), goneRepo); err != nil {
			return false, err.Error()
		}
		goneBefore = goneRepo.Status.SizeBytes
		return goneRepo.Status.LastMaintenanceTime != nil && goneBefore >= 8<<20 && goneRepo.Status.Snapshots == 1, fmt.Sprintf("%+v", goneRepo.Status)
	})
	// A backup deleted while its repository's maintenance runs waits for
	// it: maintenance that frees data at once would take what the
	// deletion writes for garbage. A run is held (the node cordoned, its
	// pod left unscheduled) while the backup is deleted.
	cordon := func(on bool) {
		t.Helper()
		patch := []byte(fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on))
		if err := c.client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	cordon(true)
	var held string
	eventually(t, "a maintenance run of the other namespace's repository held unscheduled", 2*time.Minute, func() (bool, string) {
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(goneRepo), goneRepo); err != nil {
			return false, err.Error()
		}
		if held = goneRepo.Status.MaintenanceJob; held == "" {
			return false, "no run"
		}
		pods := &corev1.PodList{}
		if err := c.client.List(ctx, pods, client.InNamespace("salvor"), client.MatchingLabels{batchv1.JobNameLabel: held}); err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 1 && pods.Items[0].Spec.NodeName == "", fmt.Sprintf("run %s: %d pods", held, len(pods.Items))
	})
	c.mustSalvor(t, "backup", "delete", "gone", "--confirm")
	eventually(t, "the deletion waiting for the held run", time.Minute, func() (bool, string) {
		b := &salvorv1.Backup{}
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "gone"}, b); err != nil {
			return false, err.Error()
		}
		return strings.Contains(b.Status.DeletionBlocked, "waiting for the maintenance of repository "+goneRepo.Name+" (Job "+held+")"), b.Status.DeletionBlocked
	})
	cordon(false)
	eventually(t, "maintenance giving the deleted backup's space back", 3*time.Minute, func() (bool, string) {
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(goneRepo), goneRepo); err != nil {
			return false, err.Error()
		}
		return goneRepo.Status.Snapshots == 0 && goneRepo.Status.SizeBytes < goneBefore/4, fmt.Sprintf("%d of %d bytes, %d snapshots, runs %+v", goneRepo.Status.SizeBytes, goneBefore, goneRepo.Status.Snapshots, goneRepo.Status.RecentMaintenance)
	})
	var before int64
	eventually(t, "a maintenance run measuring both backups' data", 2*time.Minute, func() (bool, string) {
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: name}, repo); err != nil {
			return false, err.Error()
		}
		before = repo.Status.SizeBytes
		return repo.Status.LastMaintenanceTime != nil && repo.Status.Phase == salvorv1.BackupRepositoryPhaseReady, fmt.Sprintf("%+v", repo.Status)
	})
	if before < 16<<20 || repo.Status.Snapshots != 2 {
		t.Fatalf("the repository holds two 8 MiB volumes: %d bytes, %d snapshots", before, repo.Status.Snapshots)
	}

	c.mustSalvor(t, "backup", "delete", "old", "--confirm")
	eventually(t, "backup old deleted", time.Minute, func() (bool, string) {
		err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "old"}, &salvorv1.Backup{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	deleted := time.Now().Add(-time.Second) // the API server's seconds
	eventually(t, "maintenance runs after the deletion", 3*time.Minute, func() (bool, string) {
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: name}, repo); err != nil {
			return false, err.Error()
		}
		runs := repo.Status.RecentMaintenance
		after := 0
		for _, r := range runs {
			if r.StartTimestamp != nil && r.StartTimestamp.After(deleted) {
				after++
			}
		}
		return repo.Status.Snapshots == 1 && after >= 2, fmt.Sprintf("%d of %d bytes, %d snapshots, runs %+v", repo.Status.SizeBytes, before, repo.Status.Snapshots, runs)
	})
	for _, run := range repo.Status.RecentMaintenance {
		if run.Result != salvorv1.MaintenanceSucceeded || run.StartTimestamp == nil || run.CompleteTimestamp == nil {
			t.Errorf("a maintenance run: %+v", run)
		}
	}

	// The kept backup's data is whole.
	bsl := &salvorv1.BackupStorageLocation{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "primary"}, bsl); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if _, err := openMovedRepo(t, c, bsl, minio, "app").Restore(ctx, keep.Status.SnapshotID, restored, nil); err != nil {
		t.Fatalf("the kept backup's data after maintenance: %v", err)
	}
	if got := treeSums(t, restored); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the kept backup's data differs after maintenance:\n got %v\nwant %v", got, want)
	}

	// Stop the runs; then at most two finished Jobs are kept.
	patch = []byte(`{"spec":{"maintenanceFrequency":"24h"}}`)
	for _, r := range []*salvorv1.BackupRepository{repo, goneRepo} {
		if err := c.client.Patch(ctx, r, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "old maintenance Jobs pruned", time.Minute, func() (bool, string) {
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: name}, repo); err != nil {
			return false, err.Error()
		}
		jobs := &batchv1.JobList{}
		if err := c.client.List(ctx, jobs, client.InNamespace("salvor"), client.MatchingLabels{datamover.RepositoryLabel: name}); err != nil {
			return false, err.Error()
		}
		var names []string
		for _, j := range jobs.Items {
			if j.DeletionTimestamp == nil {
				names = append(names, j.Name)
			}
		}
		return repo.Status.MaintenanceJob == "" && len(names) <= 2 && len(names) > 0, fmt.Sprint(names, repo.Status.MaintenanceJob)
	})
	out := c.mustSalvor(t, "repo", "get")
	if !strings.Contains(out, name) || !strings.Contains(out, "Ready") || !strings.Contains(out, "primary") || !strings.Contains(out, " app ") {
		t.Errorf("salvor repo get:\n%s", out)
	}

	c.checkRights(t, "salvor", "salvor-data-mover", []right{
		{authorizationv1.ResourceAttributes{Verb: "get", Namespace: "salvor", Group: "salvor.dev", Resource: "backuprepositories"}, true},
		{authorizationv1.ResourceAttributes{Verb: "patch", Namespace: "salvor", Group: "salvor.dev", Resource: "backuprepositories", Subresource: "status"}, true},
		{authorizationv1.ResourceAttributes{Verb: "patch", Namespace: "salvor", Group: "salvor.dev", Resource: "backuprepositories"}, false},
		{authorizationv1.ResourceAttributes{Verb: "delete", Namespace: "salvor", Group: "salvor.dev", Resource: "backuprepositories"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Namespace: "salvor", Group: "batch", Resource: "jobs"}, false},
	})
}
