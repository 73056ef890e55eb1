package operations

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/utils/clock"

	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

// Operation is one operation to follow: who started it, and its status,
// which Step updates in place.
type Operation struct {
	Plugin      string
	OperationID string
	// Item names the item, for messages.
	Item   string
	Status *itemoperation.Status
}

// Terminal tells whether an operation has ended.
func Terminal(s *itemoperation.Status) bool {
	return s.Phase == itemoperation.PhaseCompleted || s.Phase == itemoperation.PhaseFailed
}

// Plugin is what the tracker calls: Progress and Cancel of one plugin.
type Plugin interface {
	Progress(ctx context.Context, plugin, operationID string) (api.OperationProgress, error)
	Cancel(ctx context.Context, plugin, operationID string) error
}

// Tracker keeps each operation's polling schedule. It is safe for
// concurrent use; schedules live in memory, so after a restart every
// operation is polled soon again.
type Tracker struct {
	// First is the delay before the second poll (default 1s); each poll
	// doubles it, up to Ceiling (default 10s).
	First, Ceiling time.Duration
	// Parallel bounds concurrent Progress calls (default 16).
	Parallel int
	// Clock tells the time (default the real one): schedules, timeouts and
	// the times written into statuses all read it, so tests can move it.
	Clock clock.PassiveClock

	mu    sync.Mutex
	sched map[string]*schedule
}

type schedule struct {
	next     time.Time
	interval time.Duration
}

func (t *Tracker) defaults() {
	if t.First <= 0 {
		t.First = time.Second
	}
	if t.Ceiling <= 0 {
		t.Ceiling = 10 * time.Second
	}
	if t.Parallel <= 0 {
		t.Parallel = 16
	}
	if t.sched == nil {
		t.sched = map[string]*schedule{}
	}
	if t.Clock == nil {
		t.Clock = clock.RealClock{}
	}
}

// Forget drops the schedules of an owner's operations.
func (t *Tracker) Forget(owner string, ops []Operation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, op := range ops {
		delete(t.sched, owner+"\x00"+op.Plugin+"\x00"+op.OperationID)
	}
}

// Wake makes every operation of owner due at its next Step: whatever does
// the work said it changed (a volume job's phase, which its reconciler
// watches), so the change is asked about now instead of at a poll that
// has backed off towards Ceiling. The back-off itself is kept.
func (t *Tracker) Wake(owner string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prefix := owner + "\x00"
	for key, sc := range t.sched {
		if strings.HasPrefix(key, prefix) {
			sc.next = time.Time{}
		}
	}
}

// transient errors mean "ask again later", not "the operation failed".
func transient(err error) bool {
	return errors.Is(err, host.ErrPluginCrashed) || errors.Is(err, host.ErrPluginHung) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// Step polls the operations that are due, cancels those past timeout, and
// returns whether any changed phase and when the next one is due.
func (t *Tracker) Step(ctx context.Context, owner string, ops []Operation, timeout time.Duration, p Plugin) (bool, time.Duration) {
	t.mu.Lock()
	t.defaults()
	t.mu.Unlock()
	now := t.Clock.Now()
	var (
		wg      sync.WaitGroup
		sem     = make(chan struct{}, t.Parallel)
		mu      sync.Mutex
		changed bool
	)
	for i := range ops {
		op := ops[i]
		if Terminal(op.Status) {
			continue
		}
		key := owner + "\x00" + op.Plugin + "\x00" + op.OperationID
		t.mu.Lock()
		sc, ok := t.sched[key]
		if !ok {
			sc = &schedule{next: now, interval: t.First}
			t.sched[key] = sc
		}
		due := !sc.next.After(now)
		t.mu.Unlock()
		created := now
		if op.Status.Created != nil {
			created = op.Status.Created.Time
		}
		timedOut := timeout > 0 && now.Sub(created) >= timeout
		if !due && !timedOut {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var phaseChanged bool
			if timedOut {
				phaseChanged = t.timeOut(ctx, op, timeout, p)
			} else {
				phaseChanged = t.poll(ctx, op, p)
			}
			t.mu.Lock()
			polled := t.Clock.Now()
			sc.next = polled.Add(sc.interval)
			// An operation whose figures say it ends before the next poll
			// is asked again then, so its end is seen when it comes.
			if end, ok := predictedEnd(op.Status, polled); ok && end.Before(sc.next) {
				sc.next = maxTime(end, polled.Add(minPoll))
			}
			sc.interval = min(2*sc.interval, t.Ceiling)
			t.mu.Unlock()
			if phaseChanged {
				mu.Lock()
				changed = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return changed, t.nextDue(owner, ops, timeout)
}

func (t *Tracker) timeOut(ctx context.Context, op Operation, timeout time.Duration, p Plugin) bool {
	err := p.Cancel(ctx, op.Plugin, op.OperationID)
	now := metav1.NewTime(t.Clock.Now())
	op.Status.Phase = itemoperation.PhaseFailed
	op.Status.Error = fmt.Sprintf("timed out after %s", timeout)
	if err != nil {
		op.Status.Error += fmt.Sprintf(" (and Cancel failed: %v)", err)
	}
	op.Status.Updated = &now
	return true
}

func (t *Tracker) poll(ctx context.Context, op Operation, p Plugin) bool {
	before := op.Status.Phase
	prog, err := p.Progress(ctx, op.Plugin, op.OperationID)
	now := metav1.NewTime(t.Clock.Now())
	switch {
	case err != nil && transient(err):
		return false
	case err != nil:
		op.Status.Phase = itemoperation.PhaseFailed
		op.Status.Error = err.Error()
	default:
		op.Status.NCompleted, op.Status.NTotal = prog.NCompleted, prog.NTotal
		op.Status.OperationUnits, op.Status.Description = prog.OperationUnits, prog.Description
		if !prog.Started.IsZero() {
			st := metav1.NewTime(prog.Started)
			op.Status.Started = &st
		}
		switch {
		case prog.Completed && prog.Err != "":
			op.Status.Phase, op.Status.Error = itemoperation.PhaseFailed, prog.Err
		case prog.Completed:
			op.Status.Phase = itemoperation.PhaseCompleted
		default:
			op.Status.Phase = itemoperation.PhaseInProgress
		}
		// The plugin's own time of its figures, where it gives one: polls
		// back off, and a copy that ended between two of them ended when
		// the plugin says, which is what rates and durations are made of.
		if !prog.Updated.IsZero() && !prog.Updated.After(now.Time) {
			updated := metav1.NewTime(prog.Updated)
			op.Status.Updated = &updated
			return op.Status.Phase != before
		}
	}
	op.Status.Updated = &now
	return op.Status.Phase != before
}

// minPoll is the least time between two polls of an operation: a
// prediction that keeps coming true a moment later must not turn into
// polling in a loop.
const minPoll = time.Second

// predictedEnd is when an operation running at the rate its figures show
// (units done since it started) will have done them all.
func predictedEnd(st *itemoperation.Status, now time.Time) (time.Time, bool) {
	if st == nil || Terminal(st) || st.Started == nil || st.NCompleted <= 0 || st.NTotal <= st.NCompleted {
		return time.Time{}, false
	}
	elapsed := now.Sub(st.Started.Time)
	if elapsed <= 0 {
		return time.Time{}, false
	}
	left := time.Duration(float64(elapsed) * float64(st.NTotal-st.NCompleted) / float64(st.NCompleted))
	return now.Add(left), true
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (t *Tracker) nextDue(owner string, ops []Operation, timeout time.Duration) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	next := t.Ceiling
	now := t.Clock.Now()
	for _, op := range ops {
		if Terminal(op.Status) {
			continue
		}
		if sc, ok := t.sched[owner+"\x00"+op.Plugin+"\x00"+op.OperationID]; ok {
			next = min(next, max(sc.next.Sub(now), 50*time.Millisecond))
		}
		if timeout > 0 && op.Status.Created != nil {
			next = min(next, max(op.Status.Created.Add(timeout).Sub(now), 50*time.Millisecond))
		}
	}
	return next
}

// CancelAll cancels every operation still running, marking it Failed with reason.
func CancelAll(ctx context.Context, ops []Operation, p Plugin, reason string) {
	var wg sync.WaitGroup
	for _, op := range ops {
		if Terminal(op.Status) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := p.Cancel(ctx, op.Plugin, op.OperationID)
			now := metav1.Now()
			op.Status.Phase, op.Status.Error, op.Status.Updated = itemoperation.PhaseFailed, reason, &now
			if err != nil {
				op.Status.Error += fmt.Sprintf(" (and Cancel failed: %v)", err)
			}
		}()
	}
	wg.Wait()
}

// Counts returns how many operations completed, failed and are still running.
func Counts(ops []Operation) (completed, failed, running int) {
	for _, op := range ops {
		switch op.Status.Phase {
		case itemoperation.PhaseCompleted:
			completed++
		case itemoperation.PhaseFailed:
			failed++
		default:
			running++
		}
	}
	return
}
