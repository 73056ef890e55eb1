package veleroflag

import (
	"fmt"
	"slices"

	"github.com/spf13/pflag"
)

// Why Velero's install and server flags for machinery Salvor has not are
// refused; both commands say the same.
const (
	NoNodeAgent    = "Salvor's node agent (--use-node-agent) runs as a least-privileged Linux DaemonSet with kopia alone, and the data mover's defaults are per backup (--snapshot-move-data): docs/volumes.md"
	NoRepositories = "Salvor's repository maintenance Jobs run as its mover pods do (--data-mover-node-selector, --data-mover-tolerations, --data-mover-cpu-request, ...), with --default-repo-maintain-frequency, --keep-latest-maintenance-jobs and --repo-maintenance-safety"
	NoSweep        = "Salvor deletes each expired backup when its TTL ends, with no periodic sweep"
	NoItemBlocks   = "Salvor backs up each item on its own, with no item blocks (the server's --workers sets how many at once)"
	NoInformer     = "Salvor's restores read what exists in the cluster with their own requests, not through an informer cache"
	ReadOnly       = "make the location ReadOnly instead (--access-mode ReadOnly on salvor backup-location create or set)"
)

// Refused are flags of Velero's that a Salvor command takes only to stop,
// saying why, before it changes anything: a Velero script fails at once
// with a reason rather than half-running, or running without what it
// asked for.
type Refused struct {
	Why string
	// Bools stay bools, so `--flag` alone parses and is refused rather
	// than taking the next word as its value.
	Bools, Values []string
}

// Refuse binds the refused flags, hidden from help, and returns the check
// that fails naming the first one given.
func Refuse(f *pflag.FlagSet, refused []Refused) func() error {
	why := map[string]string{}
	for _, r := range refused {
		for _, flag := range r.Bools {
			f.Bool(flag, false, "")
			why[flag] = r.Why
		}
		for _, flag := range r.Values {
			f.String(flag, "", "")
			why[flag] = r.Why
		}
	}
	names := make([]string, 0, len(why))
	for flag := range why {
		_ = f.MarkHidden(flag)
		names = append(names, flag)
	}
	slices.Sort(names)
	return func() error {
		for _, flag := range names {
			if f.Changed(flag) {
				return fmt.Errorf("--%s is Velero's: %s: leave it out", flag, why[flag])
			}
		}
		return nil
	}
}
