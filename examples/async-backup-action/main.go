// Command async-backup-action is a BackupItemActionV2 that starts a
// long-running operation for every item annotated
// example.io/operation-seconds=N. The operation "runs" for N seconds; with
// example.io/operation-fail=true it fails at the end.
//
// It keeps no state in memory. Everything Progress needs is in the operation
// ID (start time, length, whether it fails), so a restarted plugin process
// answers for operations its predecessor started. Cancel leaves a marker
// file in a state directory (EXAMPLE_ASYNC_STATE_DIR, default
// $TMPDIR/salvor-example-async) for the same reason.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

const (
	secondsAnnotation = "example.io/operation-seconds"
	failAnnotation    = "example.io/operation-fail"
)

func main() {
	sdk.NewServer().
		RegisterBackupItemActionV2("example.io/async-operation", func(log *slog.Logger) (sdk.BackupItemActionV2, error) {
			dir := os.Getenv("EXAMPLE_ASYNC_STATE_DIR")
			if dir == "" {
				dir = filepath.Join(os.TempDir(), "salvor-example-async")
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("creating the state directory: %w", err)
			}
			return &action{log: log, stateDir: dir, now: time.Now}, nil
		}).
		Serve()
}

type action struct {
	log      *slog.Logger
	stateDir string
	now      func() time.Time
}

// Name is never called over the wire; the host knows the registered name.
func (a *action) Name() string { return "example.io/async-operation" }

func (a *action) AppliesTo() (sdk.ResourceSelector, error) { return sdk.ResourceSelector{}, nil }

// operation is what an operation ID encodes.
type operation struct {
	start  time.Time
	length time.Duration
	fail   bool
	item   string
}

func (o operation) id() string {
	fail := 0
	if o.fail {
		fail = 1
	}
	return fmt.Sprintf("%d-%d-%d-%s", o.start.UnixMilli(), o.length.Milliseconds(), fail, o.item)
}

func parseID(id string) (operation, error) {
	parts := strings.SplitN(id, "-", 4)
	if len(parts) != 4 {
		return operation{}, fmt.Errorf("operation ID %q was not made by this plugin", id)
	}
	start, err1 := strconv.ParseInt(parts[0], 10, 64)
	length, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err := errors.Join(err1, err2); err != nil || (parts[2] != "0" && parts[2] != "1") {
		return operation{}, fmt.Errorf("operation ID %q was not made by this plugin", id)
	}
	return operation{
		start:  time.UnixMilli(start),
		length: time.Duration(length) * time.Millisecond,
		fail:   parts[2] == "1",
		item:   parts[3],
	}, nil
}

func (a *action) Execute(item runtime.Unstructured, backup *sdk.Backup) (runtime.Unstructured, []sdk.ResourceIdentifier, string, []sdk.ResourceIdentifier, error) {
	obj := item.(*unstructured.Unstructured)
	ann := obj.GetAnnotations()
	raw, ok := ann[secondsAnnotation]
	if !ok {
		return item, nil, "", nil, nil
	}
	seconds, err := strconv.ParseFloat(raw, 64)
	if err != nil || seconds < 0 || seconds > 7*24*3600 {
		return nil, nil, "", nil, sdk.Errorf("annotation %s=%q on %s/%s: want a number of seconds between 0 and 604800",
			secondsAnnotation, raw, obj.GetNamespace(), obj.GetName())
	}
	sum := sha256.Sum256([]byte(backup.Name + "/" + obj.GetNamespace() + "/" + obj.GetName()))
	op := operation{
		start:  a.now(),
		length: time.Duration(seconds * float64(time.Second)),
		fail:   ann[failAnnotation] == "true",
		item:   hex.EncodeToString(sum[:6]),
	}
	gvk := obj.GroupVersionKind()
	self := sdk.ResourceIdentifier{
		GroupResource: schema.GroupResource{Group: gvk.Group, Resource: resourceOf(gvk.Kind)},
		Namespace:     obj.GetNamespace(),
		Name:          obj.GetName(),
	}
	a.log.Info("started operation", "operation", op.id(), "item", obj.GetName(), "seconds", seconds)
	// The item itself is backed up again once the operation has ended, so
	// the backup holds its final state.
	return item, nil, op.id(), []sdk.ResourceIdentifier{self}, nil
}

// resourceOf guesses the resource of a kind the way kubectl does for the
// simple cases this example handles.
func resourceOf(kind string) string {
	lower := strings.ToLower(kind)
	if strings.HasSuffix(lower, "s") {
		return lower + "es"
	}
	return lower + "s"
}

func (a *action) cancelMarker(id string) string { return filepath.Join(a.stateDir, id+".cancelled") }

func (a *action) Progress(id string, _ *sdk.Backup) (sdk.OperationProgress, error) {
	op, err := parseID(id)
	if err != nil {
		return sdk.OperationProgress{}, err
	}
	now := a.now()
	elapsed := min(max(now.Sub(op.start), 0), op.length)
	p := sdk.OperationProgress{
		NCompleted:     int64(elapsed.Seconds()),
		NTotal:         int64(math.Ceil(op.length.Seconds())),
		OperationUnits: "seconds",
		Description:    "waiting",
		Started:        op.start,
		Updated:        now,
	}
	if b, err := os.ReadFile(a.cancelMarker(id)); err == nil {
		p.Completed = true
		p.Err = "cancelled at " + strings.TrimSpace(string(b))
		p.Description = "cancelled"
		return p, nil
	}
	if elapsed >= op.length {
		p.Completed = true
		p.NCompleted = p.NTotal
		p.Description = "done"
		if op.fail {
			p.Err = "the operation failed, as its item's " + failAnnotation + " annotation asked"
			p.Description = "failed"
		}
	}
	return p, nil
}

func (a *action) Cancel(id string, _ *sdk.Backup) error {
	if _, err := parseID(id); err != nil {
		return err
	}
	a.log.Info("cancelling operation", "operation", id)
	return os.WriteFile(a.cancelMarker(id), []byte(a.now().UTC().Format(time.RFC3339)), 0o644)
}
