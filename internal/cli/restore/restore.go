package restore

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// NewCommand returns `salvor restore` and its verbs.
func NewCommand(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{Use: "restore", Aliases: []string{"restores"}, Short: "Work with restores"}
	cmd.AddCommand(newCreate(k), newGet(k), newDescribe(k), newLogs(k), newCancel(k), newDelete(k))
	return cmd
}

func phase(rs *salvorv1.Restore) string {
	if rs.Status.Phase == "" {
		return "New"
	}
	return string(rs.Status.Phase)
}

func progress(rs *salvorv1.Restore) (int, int) {
	if p := rs.Status.Progress; p != nil {
		return p.ItemsRestored, p.TotalItems
	}
	return 0, 0
}

// itemsText says how far a restore's items are, in the words of what
// happened to them: checked for a dry run, created / updated / skipped /
// failed once the pass has counted them, done while it runs.
func itemsText(rs *salvorv1.Restore) string {
	done, total := progress(rs)
	switch o := rs.Status.Outcomes; {
	case rs.Spec.DryRun:
		text := fmt.Sprintf("%d of %d items checked, nothing written", done, total)
		if d := rs.Status.DryRun; d != nil {
			text += fmt.Sprintf(" (would create %d, identical %d, differing %d, skip %d, fail %d)", d.WouldCreate, d.Identical, d.Differs, d.Skipped, d.WouldFail)
		}
		return text
	case o != nil:
		return fmt.Sprintf("%d of %d items: %d created, %d updated, %d skipped, %d failed", done, total, o.Created, o.Updated, o.Skipped, o.Failed)
	}
	return fmt.Sprintf("%d of %d items done", done, total)
}

// restoredItems says whether a restore in this phase has finished its pass
// over the items, and so written what became of each.
func restoredItems(p salvorv1.RestorePhase) bool {
	switch p {
	case "", salvorv1.RestorePhaseNew, salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhaseInProgress, salvorv1.RestorePhaseFailed:
		return false
	}
	return true
}
