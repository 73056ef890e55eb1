package backup

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/output"
	"github.com/salvor-dev/salvor/internal/itemoperation"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func waiting(p salvorv1.BackupPhase) bool {
	return p == salvorv1.BackupPhaseWaitingForPluginOperations || p == salvorv1.BackupPhaseWaitingForPluginOperationsPartiallyFailed
}

// operationsOf fetches a backup's operation records through the server.
func operationsOf(ctx context.Context, c client.Client, b *salvorv1.Backup, trust Trust) ([]itemoperation.BackupOperation, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rc, err := Download(ctx, c, b.Namespace, salvorv1.DownloadTargetBackupItemOperations, b.Name, trust)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var ops []itemoperation.BackupOperation
	if err := json.NewDecoder(io.LimitReader(rc, 64<<20)).Decode(&ops); err != nil {
		return nil, fmt.Errorf("reading the operations: %w", err)
	}
	return ops, nil
}

func item(id itemoperation.ResourceIdentifier) string {
	res := id.Resource
	if id.Group != "" {
		res += "." + id.Group
	}
	if id.Namespace == "" {
		return res + " " + id.Name
	}
	return res + " " + id.Namespace + "/" + id.Name
}

func describeOperations(w io.Writer, b *salvorv1.Backup, ops []itemoperation.BackupOperation, details bool) {
	if waiting(b.Status.Phase) {
		waitingOn := map[string]int{}
		for _, op := range ops {
			if op.Status.Phase != itemoperation.PhaseCompleted && op.Status.Phase != itemoperation.PhaseFailed {
				waitingOn[op.Spec.BackupItemAction]++
			}
		}
		var names []string
		for p, n := range waitingOn {
			names = append(names, fmt.Sprintf("%s (%d)", p, n))
		}
		sort.Strings(names)
		fmt.Fprintf(w, "Waiting for:  %s\n", strings.Join(names, ", "))
	}
	if !details {
		return
	}
	fmt.Fprintln(w, "\nItem operations:")
	// The location's record of an operation is written when the backup
	// waits and when it ends; while it waits, the Backup's status has
	// each running operation's progress from the last poll.
	live := map[string]salvorv1.OperationSummary{}
	for _, r := range b.Status.RunningOperations {
		live[r.Plugin+"/"+r.OperationID] = r
	}
	allLive := len(b.Status.RunningOperations) < 50 // the status lists at most 50
	var rows [][]string
	for _, op := range ops {
		s := op.Status
		if waiting(b.Status.Phase) {
			if r, ok := live[op.Spec.BackupItemAction+"/"+op.Spec.OperationID]; ok {
				s.NCompleted, s.NTotal, s.OperationUnits, s.Description = r.NCompleted, r.NTotal, r.Units, r.Description
				s.Phase = itemoperation.Phase(r.Phase)
				if r.Updated != nil {
					s.Updated = r.Updated
				}
			} else if allLive && s.Phase != itemoperation.PhaseCompleted && s.Phase != itemoperation.PhaseFailed {
				// Not running any more; how it ended is recorded when the
				// backup ends.
				s.Phase = "Ended"
			}
		}
		progress := "-"
		if s.NTotal > 0 || s.NCompleted > 0 {
			progress = fmt.Sprintf("%d of %d %s", s.NCompleted, s.NTotal, s.OperationUnits)
		}
		started, updated := output.Time(s.Started), output.Time(s.Updated)
		phase := string(s.Phase)
		if phase == "" {
			phase = "New"
		}
		rows = append(rows, []string{op.Spec.BackupItemAction, item(op.Spec.ResourceIdentifier), op.Spec.OperationID, phase,
			progress, s.Description, started, updated, s.Error})
	}
	_ = output.Table(w, []string{"PLUGIN", "ITEM", "OPERATION ID", "PHASE", "PROGRESS", "DESCRIPTION", "STARTED", "UPDATED", "ERROR"}, rows)
}
