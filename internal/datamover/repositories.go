package datamover

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/kopia/kopia/repo/blob"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/kopiarepo"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Repositories makes the kopia repositories of the server's locations,
// one at a time: two movers making one repository at once would each
// write its own format blob, and neither could read the other's data.
type Repositories struct {
	// Locate is how the server reaches a location (its config, with the
	// server's file of its credential).
	Locate    func(ctx context.Context, bsl *salvorv1.BackupStorageLocation) (kopiarepo.Location, error)
	Passwords *Passwords
	// Gate, when set, keeps the server's reads and writes of a repository
	// (Check, Forget) apart from its maintenance, read through Reader.
	Gate   *Gate
	Reader ctrl.Reader

	mu    sync.Mutex
	known map[string]bool // location UID/namespace of repositories seen
}

// storage returns namespace ns's storage in bsl and its password.
func (r *Repositories) storage(ctx context.Context, bsl *salvorv1.BackupStorageLocation, ns string, create bool) (blob.Storage, string, error) {
	loc, err := r.Locate(ctx, bsl)
	if err != nil {
		return nil, "", err
	}
	password, err := r.Passwords.Get(ctx, bsl)
	if err != nil {
		return nil, "", err
	}
	st, err := kopiarepo.Storage(ctx, loc, ns, create)
	if err != nil {
		return nil, "", fmt.Errorf("backup storage location %s: %w", bsl.Name, err)
	}
	return st, password, nil
}

// open opens namespace ns's repository in bsl.
func (r *Repositories) open(ctx context.Context, bsl *salvorv1.BackupStorageLocation, ns string) (*kopiarepo.Repository, func(), error) {
	st, password, err := r.storage(ctx, bsl, ns, false)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "salvor-kopia-")
	if err != nil {
		st.Close(ctx) //nolint:errcheck
		return nil, nil, err
	}
	repo, err := kopiarepo.Open(ctx, st, kopiarepo.Options{Password: password, WorkDir: dir, CacheBytes: 1 << 20})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("backup storage location %s, repository of namespace %s: %w", bsl.Name, ns, err)
	}
	return repo, func() { repo.Close(context.WithoutCancel(ctx)); os.RemoveAll(dir) }, nil
}

// Check finds the snapshot of src in namespace ns's repository in bsl and
// reads its root (kopiarepo.Repository.Check): what verifying a backup's
// moved data asks. While the repository's maintenance frees data at once
// it returns a *MaintenanceRunningError.
func (r *Repositories) Check(ctx context.Context, bsl *salvorv1.BackupStorageLocation, ns string, src kopiarepo.Source) (kopiarepo.Snapshot, error) {
	leave, err := r.Gate.enter(ctx, r.Reader, bsl, ns)
	if err != nil {
		return kopiarepo.Snapshot{}, err
	}
	defer leave()
	r.mu.Lock()
	defer r.mu.Unlock()
	repo, done, err := r.open(ctx, bsl, ns)
	if err != nil {
		return kopiarepo.Snapshot{}, err
	}
	defer done()
	return repo.Check(ctx, src)
}

// Forget deletes kopia snapshots from namespace ns's repository in bsl
// (their data goes at the repository's next full maintenance). While the
// repository's maintenance frees data at once it returns a
// *MaintenanceRunningError.
func (r *Repositories) Forget(ctx context.Context, bsl *salvorv1.BackupStorageLocation, ns string, ids []string) error {
	leave, err := r.Gate.enter(ctx, r.Reader, bsl, ns)
	if err != nil {
		return err
	}
	defer leave()
	r.mu.Lock()
	defer r.mu.Unlock()
	repo, done, err := r.open(ctx, bsl, ns)
	if errors.Is(err, kopiarepo.ErrNoRepository) {
		return nil
	}
	if err != nil {
		return err
	}
	defer done()
	for _, id := range ids {
		if err := repo.Forget(ctx, id); err != nil {
			return fmt.Errorf("backup storage location %s, repository of namespace %s: forgetting snapshot %s: %w", bsl.Name, ns, id, err)
		}
	}
	return nil
}

// Ensure makes namespace ns's repository in bsl when it has none.
func (r *Repositories) Ensure(ctx context.Context, bsl *salvorv1.BackupStorageLocation, ns string) error {
	key := string(bsl.UID) + "/" + ns
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.known[key] {
		return nil
	}
	if bsl.Spec.ReadOnly() {
		return fmt.Errorf("backup storage location %s is ReadOnly: no volume data is written to it", bsl.Name)
	}
	// The retention a repository is made with (one already there keeps
	// its own; maintenance follows the location's).
	retention, err := Retention(bsl)
	if err != nil {
		return err
	}
	st, password, err := r.storage(ctx, bsl, ns, true)
	if err != nil {
		return err
	}
	defer st.Close(context.WithoutCancel(ctx)) //nolint:errcheck
	// Made, not opened: the mover or node agent that writes it opens it
	// (and finds a wrong password then), and an open here would cost the
	// backup another derivation of the repository's key.
	if err := kopiarepo.Create(ctx, st, password, retention); err != nil {
		return fmt.Errorf("backup storage location %s, repository of namespace %s: %w", bsl.Name, ns, err)
	}
	if r.known == nil {
		r.known = map[string]bool{}
	}
	r.known[key] = true
	return nil
}
