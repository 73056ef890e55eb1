package datamover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/kopiarepo"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Mover is what runs in a mover pod.
type Mover struct {
	Client    client.Client
	Namespace string
	// Name is the DataUpload (or DataDownload).
	Name string
	// Dir is the volume's mount path; WorkDir kopia's config and caches.
	Dir, WorkDir    string
	CredentialsFile string
	// CACertFile is the CA bundle of the location's caCertRef, mounted.
	CACertFile string
	Password   string
	// Every is how often progress is written (0: 2s).
	Every time.Duration
}

// Upload uploads the volume at Dir for DataUpload Name and records the
// result on its status. The upload's phase is the reconciler's to move:
// the mover writes only progress and, at the end, the snapshot.
func (m *Mover) Upload(ctx context.Context) error {
	du := &salvorv1.DataUpload{}
	if err := m.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, du); err != nil {
		return fmt.Errorf("DataUpload %s/%s: %w", m.Namespace, m.Name, err)
	}
	err := m.upload(ctx, du)
	if err != nil {
		// Said on the status too: the reconciler reports it if this was
		// the last attempt.
		_ = m.patch(context.WithoutCancel(ctx), &salvorv1.DataUpload{}, map[string]any{"message": err.Error()})
	}
	return err
}

func (m *Mover) upload(ctx context.Context, du *salvorv1.DataUpload) error {
	repo, _, err := m.open(ctx, du.Spec.BackupStorageLocation, du.Spec.SourceNamespace, false)
	if err != nil {
		return err
	}
	defer repo.Close(context.WithoutCancel(ctx))
	src := MovedSource(du.Spec.SourceNamespace, du.Spec.SourcePVC, du.Name, du.Labels[salvorv1.BackupNameLabel])
	report, stop := m.progress(ctx, &salvorv1.DataUpload{})
	res, err := repo.Backup(ctx, m.Dir, src, report)
	stop() // no progress after the result
	if err != nil {
		return fmt.Errorf("claim %s/%s: %w", du.Spec.SourceNamespace, du.Spec.SourcePVC, err)
	}
	return m.patch(ctx, &salvorv1.DataUpload{}, map[string]any{
		"snapshotID": res.SnapshotID, "path": src.Requester + "/kopia/" + src.Name,
		"incrementalBytes": res.IncrementalBytes, "message": "",
		"progress": map[string]any{"totalBytes": res.TotalBytes, "bytesDone": res.TotalBytes},
	})
}

// patch merges fields into the status of the DataUpload or DataDownload
// (obj) this mover serves.
func (m *Mover) patch(ctx context.Context, obj client.Object, status map[string]any) error {
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	obj.SetNamespace(m.Namespace)
	obj.SetName(m.Name)
	if err := m.Client.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("%s status: %w", describeOwner(obj), err)
	}
	return nil
}

// progress returns a progress callback that writes at most every m.Every
// (2s by default), and a stop that ends its writes.
func (m *Mover) progress(ctx context.Context, obj client.Object) (report func(kopiarepo.Progress), stop func()) {
	var mu sync.Mutex
	var last time.Time
	stopped := false
	every := m.Every
	if every == 0 {
		every = 2 * time.Second
	}
	report = func(p kopiarepo.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if stopped || time.Since(last) < every {
			return
		}
		last = time.Now()
		_ = m.patch(ctx, obj, map[string]any{"progress": map[string]any{"totalBytes": p.TotalBytes, "bytesDone": p.BytesDone}})
	}
	return report, func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
	}
}

// DownloadSource is what a download restores, found inside the
// repository by what it is — the backed-up claim, the upload that moved
// it, the backup — so that an ID written into the bucket cannot point a
// restore at other data. Velero tags its snapshots with the upload's
// operation alone (which holds its backup's UID).
func DownloadSource(dd *salvorv1.DataDownload) kopiarepo.Source {
	claim := dd.Annotations[salvorv1.SourceClaimAnnotation]
	if op := dd.Annotations[salvorv1.VeleroOperationAnnotation]; op != "" {
		return kopiarepo.Source{Requester: kopiarepo.DataMover, Name: dd.Spec.SourceNamespace + "/" + claim,
			Tags: map[string]string{salvorv1.VeleroAsyncOperationIDLabel: op}}
	}
	return MovedSource(dd.Spec.SourceNamespace, claim, dd.Annotations[salvorv1.DataUploadAnnotation], dd.Labels[salvorv1.BackupNameLabel])
}

// movedBy names what moved a download's data.
func movedBy(dd *salvorv1.DataDownload) string {
	if op := dd.Annotations[salvorv1.VeleroOperationAnnotation]; op != "" {
		return "Velero's data upload " + op
	}
	return "DataUpload " + dd.Annotations[salvorv1.DataUploadAnnotation]
}

// MovedSource is the kopia source of a claim's data moved by DataUpload
// upload for the backup whose label value is backupLabel: what the upload
// tags its snapshot with, and what a download or a verification finds it
// by.
func MovedSource(namespace, claim, upload, backupLabel string) kopiarepo.Source {
	return kopiarepo.Source{Requester: kopiarepo.DataMover, Name: namespace + "/" + claim,
		Tags: map[string]string{salvorv1.VeleroAsyncOperationIDLabel: upload, salvorv1.BackupNameLabel: backupLabel}}
}

// Download writes the data of DataDownload Name into the volume at Dir.
// The download's phase is the reconciler's to move: the mover writes
// only progress, and why it failed.
func (m *Mover) Download(ctx context.Context) error {
	dd := &salvorv1.DataDownload{}
	if err := m.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, dd); err != nil {
		return fmt.Errorf("DataDownload %s/%s: %w", m.Namespace, m.Name, err)
	}
	err := m.download(ctx, dd)
	if err != nil {
		_ = m.patch(context.WithoutCancel(ctx), &salvorv1.DataDownload{}, map[string]any{"message": err.Error()})
	}
	return err
}

func (m *Mover) download(ctx context.Context, dd *salvorv1.DataDownload) error {
	if problem := CheckDownload(dd); problem != "" {
		return errors.New(problem)
	}
	repo, bsl, err := m.open(ctx, dd.Spec.BackupStorageLocation, dd.Spec.SourceNamespace, true)
	if err != nil {
		return err
	}
	defer repo.Close(context.WithoutCancel(ctx))
	src := DownloadSource(dd)
	claim := dd.Spec.SourceNamespace + "/" + dd.Annotations[salvorv1.SourceClaimAnnotation]
	snap, err := repo.Find(ctx, src)
	if err != nil {
		return fmt.Errorf("the data of claim %s (backup %s, %s) in location %s: %w", claim, dd.Labels[salvorv1.BackupNameLabel],
			movedBy(dd), bsl.Name, err)
	}
	if dd.Spec.SnapshotID != "" && dd.Spec.SnapshotID != snap.ID {
		return fmt.Errorf("spec.snapshotID %s is not the data of claim %s in backup %s (that is snapshot %s): refusing to restore it", dd.Spec.SnapshotID, claim, dd.Labels[salvorv1.BackupNameLabel], snap.ID)
	}
	report, stop := m.progress(ctx, &salvorv1.DataDownload{})
	n, err := repo.Restore(ctx, snap.ID, m.Dir, report)
	stop()
	if err != nil {
		return fmt.Errorf("claim %s: %w", claim, err)
	}
	return m.patch(ctx, &salvorv1.DataDownload{}, map[string]any{"message": "", "progress": map[string]any{"totalBytes": n, "bytesDone": n}})
}

// open opens namespace ns's repository in location name; readOnly for
// restores, which a ReadOnly location allows.
func (m *Mover) open(ctx context.Context, name, ns string, readOnly bool) (*kopiarepo.Repository, *salvorv1.BackupStorageLocation, error) {
	if m.Password == "" {
		return nil, nil, fmt.Errorf("no repository password for location %s (%s or %s, from Secret %s key %s or %s-%s)", name, LocationPasswordEnv, PasswordEnv,
			PasswordSecret, PasswordKey, PasswordKey, name)
	}
	bsl := &salvorv1.BackupStorageLocation{}
	if err := m.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, bsl); err != nil {
		return nil, nil, fmt.Errorf("backup storage location %s: %w", name, err)
	}
	if !readOnly && bsl.Spec.ReadOnly() {
		return nil, nil, fmt.Errorf("backup storage location %s is ReadOnly: no volume data is written to it", bsl.Name)
	}
	var ca []byte
	if m.CACertFile != "" {
		var err error
		if ca, err = os.ReadFile(m.CACertFile); err != nil {
			return nil, nil, fmt.Errorf("backup storage location %s: its caCertRef's bundle: %w", bsl.Name, err)
		}
	}
	// The server made the repository before any upload's pod.
	st, err := kopiarepo.Storage(ctx, Location(bsl, m.CredentialsFile, string(ca)), ns, false)
	if err != nil {
		return nil, nil, fmt.Errorf("backup storage location %s: %w", bsl.Name, err)
	}
	repo, err := kopiarepo.Open(ctx, st, kopiarepo.Options{Password: m.Password, WorkDir: m.WorkDir, ReadOnly: readOnly})
	if err != nil {
		return nil, nil, fmt.Errorf("backup storage location %s, repository of namespace %s: %w", bsl.Name, ns, err)
	}
	return repo, bsl, nil
}

// WriteTermination writes err where Kubernetes reads a container's
// termination message.
func WriteTermination(err error) {
	if err == nil {
		return
	}
	msg := err.Error()
	if len(msg) > 4000 {
		msg = msg[:4000]
	}
	if werr := os.WriteFile("/dev/termination-log", []byte(msg), 0o644); werr != nil && !errors.Is(werr, os.ErrNotExist) {
		return
	}
}
