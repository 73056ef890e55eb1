package selfservice

import (
	"context"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/tenancy"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// recheck is how soon a request waiting for its namespace's turn is
// looked at again.
const recheck = 2 * time.Second

// quota counts what a namespace has in the server's namespace, for the
// limits of tenancy.Quota. It reads past the cache: a copy made a moment
// ago must count, or two requests could take the last place.
type quota struct {
	// Reader reads the server's namespace (Namespace); Tenants reads
	// tenants' requests.
	Reader, Tenants client.Reader
	Namespace       string
	// Files is the size of a backup's files in its location, as its
	// manifest records them (ok false: it has none).
	Files func(ctx context.Context, b *salvorv1.Backup) (n int64, ok bool, err error)
	// sizes remembers Files of finished backups, by UID.
	sizes *sync.Map
}

// running counts the namespace's backups and restores not finished.
func (q quota) running(ctx context.Context, ns string) (int, error) {
	of := []client.ListOption{client.InNamespace(q.Namespace), client.MatchingLabels{namespaceLabel: ns}}
	backups, restores := &salvorv1.BackupList{}, &salvorv1.RestoreList{}
	if err := q.Reader.List(ctx, backups, of...); err != nil {
		return 0, fmt.Errorf("counting the running backups of namespace %s: %w", ns, err)
	}
	if err := q.Reader.List(ctx, restores, of...); err != nil {
		return 0, fmt.Errorf("counting the running restores of namespace %s: %w", ns, err)
	}
	n := 0
	for _, b := range backups.Items {
		if b.DeletionTimestamp == nil && !b.Status.Phase.Ended() {
			n++
		}
	}
	for _, r := range restores.Items {
		if !r.Status.Phase.Ended() {
			n++
		}
	}
	return n, nil
}

// usage is what the namespace has in location loc: its backups, and,
// when the location bounds it (bytes), the bytes they hold.
func (q quota) usage(ctx context.Context, ns string, loc *salvorv1.BackupStorageLocation, bytes bool) (kept int, held int64, err error) {
	backups := &salvorv1.BackupList{}
	if err := q.Reader.List(ctx, backups, client.InNamespace(q.Namespace), client.MatchingLabels{namespaceLabel: ns}); err != nil {
		return 0, 0, fmt.Errorf("counting the backups namespace %s keeps: %w", ns, err)
	}
	for i := range backups.Items {
		b := &backups.Items[i]
		if b.DeletionTimestamp != nil || b.Status.Phase == salvorv1.BackupPhaseDeleting || b.Spec.StorageLocation != loc.Name {
			continue
		}
		kept++
		if !bytes {
			continue
		}
		n, err := q.holds(ctx, b)
		if err != nil {
			return 0, 0, fmt.Errorf("reckoning what backup %s holds in location %s: %w", b.Name, loc.Name, err)
		}
		held += n
	}
	return kept, held, nil
}

// holds is what backup b holds in its location: its files, as its
// manifest says (remembered once it is final), and the new data its
// volumes' moves wrote into the location's repositories.
func (q quota) holds(ctx context.Context, b *salvorv1.Backup) (int64, error) {
	var files int64
	if v, ok := q.sizes.Load(b.UID); ok {
		files = v.(int64)
	} else if b.Status.Phase.Ended() {
		n, _, err := q.Files(ctx, b)
		if err != nil {
			return 0, err
		}
		q.sizes.Store(b.UID, n)
		files = n
	}
	of := []client.ListOption{client.InNamespace(q.Namespace), client.MatchingLabels{salvorv1.BackupUIDLabel: string(b.UID)}}
	uploads, volumes := &salvorv1.DataUploadList{}, &salvorv1.PodVolumeBackupList{}
	if err := q.Reader.List(ctx, uploads, of...); err != nil {
		return 0, err
	}
	if err := q.Reader.List(ctx, volumes, of...); err != nil {
		return 0, err
	}
	for _, u := range uploads.Items {
		files += u.Status.IncrementalBytes
	}
	for _, v := range volumes.Items {
		files += v.Status.IncrementalBytes
	}
	return files, nil
}

// turn says why a judged request (self) must wait before it runs in
// location loc ("" when it may run now): its namespace's jobs running,
// and its namespace's requests not started yet that came first.
func (q quota) turn(ctx context.Context, self client.Object, loc *salvorv1.BackupStorageLocation) (string, error) {
	ns := self.GetNamespace()
	running, err := q.running(ctx, ns)
	if err != nil {
		return "", err
	}
	backups, restores := &salvorv1.BackupList{}, &salvorv1.RestoreList{}
	if err := q.Tenants.List(ctx, backups, client.InNamespace(ns)); err != nil {
		return "", err
	}
	if err := q.Tenants.List(ctx, restores, client.InNamespace(ns)); err != nil {
		return "", err
	}
	var earlier []string
	first := func(o client.Object, started bool) {
		if !started && o.GetUID() != self.GetUID() && before(o, self) {
			earlier = append(earlier, o.GetName())
		}
	}
	for i := range backups.Items {
		b := &backups.Items[i]
		first(b, b.Status.Phase != "" && b.Status.Phase != salvorv1.BackupPhaseNew)
	}
	for i := range restores.Items {
		r := &restores.Items[i]
		first(r, r.Status.Phase != "" && r.Status.Phase != salvorv1.RestorePhaseNew)
	}
	return tenancy.Turn(ns, loc, running, earlier), nil
}

// before tells whether a was made before b (by name when at once).
func before(a, b client.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.GetName() < b.GetName()
}
