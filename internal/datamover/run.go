package datamover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	Password        string
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
		_ = m.patch(context.WithoutCancel(ctx), map[string]any{"message": err.Error()})
	}
	return err
}

func (m *Mover) upload(ctx context.Context, du *salvorv1.DataUpload) error {
	if m.Password == "" {
		return fmt.Errorf("no repository password (%s, from Secret %s key %s)", PasswordEnv, PasswordSecret, PasswordKey)
	}
	bsl := &salvorv1.BackupStorageLocation{}
	if err := m.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: du.Spec.BackupStorageLocation}, bsl); err != nil {
		return fmt.Errorf("backup storage location %s: %w", du.Spec.BackupStorageLocation, err)
	}
	if bsl.Spec.ReadOnly() {
		return fmt.Errorf("backup storage location %s is ReadOnly: no volume data is written to it", bsl.Name)
	}
	// The server made the repository before this pod (Repositories).
	st, err := kopiarepo.Storage(ctx, Location(bsl, m.CredentialsFile), du.Spec.SourceNamespace, false)
	if err != nil {
		return fmt.Errorf("backup storage location %s: %w", bsl.Name, err)
	}
	repo, err := kopiarepo.Open(ctx, st, kopiarepo.Options{Password: m.Password, WorkDir: m.WorkDir})
	if err != nil {
		return fmt.Errorf("backup storage location %s, repository of namespace %s: %w", bsl.Name, du.Spec.SourceNamespace, err)
	}
	defer repo.Close(context.WithoutCancel(ctx))

	var mu sync.Mutex
	var last time.Time
	every := m.Every
	if every == 0 {
		every = 2 * time.Second
	}
	progress := func(p kopiarepo.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < every {
			return
		}
		last = time.Now()
		_ = m.patch(ctx, map[string]any{"progress": map[string]any{"totalBytes": p.TotalBytes, "bytesDone": p.BytesDone}})
	}
	src := kopiarepo.Source{Requester: kopiarepo.DataMover, Name: du.Spec.SourceNamespace + "/" + du.Spec.SourcePVC,
		Tags: map[string]string{salvorv1.VeleroAsyncOperationIDLabel: du.Name, salvorv1.BackupNameLabel: du.Labels[salvorv1.BackupNameLabel]}}
	res, err := repo.Backup(ctx, m.Dir, src, progress)
	if err != nil {
		return fmt.Errorf("claim %s/%s: %w", du.Spec.SourceNamespace, du.Spec.SourcePVC, err)
	}
	mu.Lock()
	defer mu.Unlock()
	last = time.Now().Add(time.Hour) // no progress after the result
	return m.patch(ctx, map[string]any{
		"snapshotID": res.SnapshotID, "path": src.Requester + "/kopia/" + src.Name,
		"incrementalBytes": res.IncrementalBytes, "message": "",
		"progress": map[string]any{"totalBytes": res.TotalBytes, "bytesDone": res.TotalBytes},
	})
}

// patch merges fields into the DataUpload's status.
func (m *Mover) patch(ctx context.Context, status map[string]any) error {
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	du := &salvorv1.DataUpload{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
	if err := m.Client.Status().Patch(ctx, du, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("DataUpload %s/%s status: %w", m.Namespace, m.Name, err)
	}
	return nil
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
