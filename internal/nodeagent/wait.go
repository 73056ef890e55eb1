package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// WaitRestored waits until every directory under dir (one per volume)
// holds DoneDir/uid, then removes the markers (and DoneDir when it is
// empty; what cannot be removed stays, said on w).
func WaitRestored(ctx context.Context, dir, uid string, every time.Duration, w io.Writer) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading the volumes under %s: %w", dir, err)
	}
	var vols []string
	for _, e := range entries {
		if e.IsDir() {
			vols = append(vols, e.Name())
		}
	}
	if len(vols) == 0 {
		return fmt.Errorf("no volume is mounted under %s", dir)
	}
	sort.Strings(vols)
	fmt.Fprintf(w, "waiting for volumes %s to be restored\n", strings.Join(vols, ", "))
	t := time.NewTicker(max(every, 10*time.Millisecond))
	defer t.Stop()
	for {
		var missing []string
		for _, v := range vols {
			if _, err := os.Stat(filepath.Join(dir, v, DoneDir, uid)); err != nil {
				missing = append(missing, v)
			}
		}
		if len(missing) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("volumes %s not restored: %w", strings.Join(missing, ", "), ctx.Err())
		case <-t.C:
		}
	}
	for _, v := range vols {
		done := filepath.Join(dir, v, DoneDir)
		err := os.Remove(filepath.Join(done, uid))
		if err == nil {
			if rerr := os.Remove(done); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && !isNotEmpty(rerr) {
				err = rerr
			}
		}
		if err != nil {
			fmt.Fprintf(w, "volume %s restored; its marker stays: %v\n", v, err)
		}
	}
	fmt.Fprintf(w, "volumes %s restored\n", strings.Join(vols, ", "))
	return nil
}

// isNotEmpty: another restore's marker is still there.
func isNotEmpty(err error) bool {
	return errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)
}
