package operations

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

// plugin answers Progress from a table and records every call.
type plugin struct {
	mu        sync.Mutex
	progress  map[string]api.OperationProgress
	err       map[string]error
	cancelErr error
	polls     map[string]int
	cancels   []string
}

func newPlugin() *plugin {
	return &plugin{progress: map[string]api.OperationProgress{}, err: map[string]error{}, polls: map[string]int{}}
}

func (p *plugin) Progress(_ context.Context, _, id string) (api.OperationProgress, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.polls[id]++
	return p.progress[id], p.err[id]
}

func (p *plugin) Cancel(_ context.Context, _, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cancels = append(p.cancels, id)
	return p.cancelErr
}

func op(id string, created time.Time) Operation {
	c := metav1.NewTime(created)
	return Operation{Plugin: "example.io/p", OperationID: id, Item: "ns/" + id,
		Status: &itemoperation.Status{Phase: itemoperation.PhaseNew, Created: &c}}
}

var start = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func TestTrackerBacksOffUpToTheCeiling(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(start)
	tr := &Tracker{First: time.Second, Ceiling: 4 * time.Second, Clock: clk}
	p := newPlugin()
	p.progress["a"] = api.OperationProgress{NCompleted: 1, NTotal: 10}
	ops := []Operation{op("a", start)}

	// The first Step polls at once; then the gaps are 1s, 2s, 4s, 4s.
	var polledAt []time.Duration
	for elapsed := time.Duration(0); elapsed <= 16*time.Second; elapsed += 500 * time.Millisecond {
		clk.SetTime(start.Add(elapsed))
		before := p.polls["a"]
		tr.Step(context.Background(), "b1", ops, 0, p)
		if p.polls["a"] != before {
			polledAt = append(polledAt, elapsed)
		}
	}
	want := []time.Duration{0, 1 * time.Second, 3 * time.Second, 7 * time.Second, 11 * time.Second, 15 * time.Second}
	if fmt.Sprint(polledAt) != fmt.Sprint(want) {
		t.Errorf("polled at %v, want %v", polledAt, want)
	}
	if s := ops[0].Status; s.Phase != itemoperation.PhaseInProgress || s.NCompleted != 1 || s.NTotal != 10 || !s.Updated.Time.Equal(start.Add(15*time.Second)) {
		t.Errorf("status %+v", s)
	}
}

func TestTrackerWakeMakesOnlyItsOwnersOperationsDue(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(start)
	tr := &Tracker{First: 8 * time.Second, Ceiling: 8 * time.Second, Clock: clk}
	p := newPlugin()
	p.progress["a"] = api.OperationProgress{NCompleted: 1, NTotal: 10}
	p.progress["b"] = api.OperationProgress{NCompleted: 1, NTotal: 10}
	mine, theirs := []Operation{op("a", start)}, []Operation{op("b", start)}
	// Owner names that share a prefix: waking one must not wake the other.
	tr.Step(context.Background(), "ns/b1", mine, 0, p)
	tr.Step(context.Background(), "ns/b10", theirs, 0, p)

	clk.SetTime(start.Add(time.Second))
	tr.Step(context.Background(), "ns/b1", mine, 0, p)
	if p.polls["a"] != 1 {
		t.Fatalf("polled %d times before its poll was due, want 1", p.polls["a"])
	}
	p.progress["a"] = api.OperationProgress{NCompleted: 10, NTotal: 10, Completed: true}
	tr.Wake("ns/b1")
	changed, _ := tr.Step(context.Background(), "ns/b1", mine, 0, p)
	if p.polls["a"] != 2 || !changed || mine[0].Status.Phase != itemoperation.PhaseCompleted {
		t.Errorf("after Wake: %d polls, changed %v, phase %s; want 2, true, Completed", p.polls["a"], changed, mine[0].Status.Phase)
	}
	tr.Step(context.Background(), "ns/b10", theirs, 0, p)
	if p.polls["b"] != 1 {
		t.Errorf("another owner's operation polled %d times, want 1: Wake woke it too", p.polls["b"])
	}
}

func TestTrackerPhases(t *testing.T) {
	for _, tc := range []struct {
		name     string
		progress api.OperationProgress
		err      error
		phase    itemoperation.Phase
		errText  string
		changed  bool
	}{
		{name: "running", progress: api.OperationProgress{NCompleted: 3}, phase: itemoperation.PhaseInProgress, changed: true},
		{name: "completed", progress: api.OperationProgress{Completed: true, NCompleted: 5, NTotal: 5}, phase: itemoperation.PhaseCompleted, changed: true},
		{name: "completed with an error", progress: api.OperationProgress{Completed: true, Err: "disk full"}, phase: itemoperation.PhaseFailed, errText: "disk full", changed: true},
		{name: "plugin error", err: errors.New("no such operation"), phase: itemoperation.PhaseFailed, errText: "no such operation", changed: true},
		{name: "crashed plugin: ask again later", err: fmt.Errorf("call: %w", host.ErrPluginCrashed), phase: itemoperation.PhaseNew},
		{name: "hung plugin: ask again later", err: fmt.Errorf("call: %w", host.ErrPluginHung), phase: itemoperation.PhaseNew},
		{name: "deadline: ask again later", err: context.DeadlineExceeded, phase: itemoperation.PhaseNew},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(start)
			tr := &Tracker{Clock: clk}
			p := newPlugin()
			p.progress["a"], p.err["a"] = tc.progress, tc.err
			ops := []Operation{op("a", start)}
			changed, _ := tr.Step(context.Background(), "b1", ops, time.Hour, p)
			if changed != tc.changed || ops[0].Status.Phase != tc.phase || ops[0].Status.Error != tc.errText {
				t.Errorf("changed %v, status %+v; want changed %v, phase %s, error %q", changed, ops[0].Status, tc.changed, tc.phase, tc.errText)
			}
			if len(p.cancels) != 0 {
				t.Errorf("cancelled %v", p.cancels)
			}
		})
	}
}

func TestTrackerTimesOutWithCancel(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(start)
	tr := &Tracker{Clock: clk}
	p := newPlugin()
	p.cancelErr = errors.New("plugin gone")
	ops := []Operation{op("old", start.Add(-2*time.Minute)), op("young", start)}

	changed, next := tr.Step(context.Background(), "b1", ops, time.Minute, p)
	if !changed {
		t.Error("a timed-out operation did not count as a change")
	}
	old, young := ops[0].Status, ops[1].Status
	if old.Phase != itemoperation.PhaseFailed || old.Error != "timed out after 1m0s (and Cancel failed: plugin gone)" {
		t.Errorf("old: %+v", old)
	}
	if p.polls["old"] != 0 || fmt.Sprint(p.cancels) != "[old]" {
		t.Errorf("polls %v, cancels %v: a timed-out operation is cancelled, not polled", p.polls, p.cancels)
	}
	if young.Phase == itemoperation.PhaseFailed || p.polls["young"] != 1 {
		t.Errorf("young: %+v, polled %d times", young, p.polls["young"])
	}
	if next != time.Second {
		t.Errorf("next due in %s, want the young one's first interval, 1s", next)
	}

	// Terminal operations are left alone from then on.
	clk.SetTime(start.Add(2 * time.Minute))
	tr.Step(context.Background(), "b1", ops, time.Minute, p)
	if fmt.Sprint(p.cancels) != "[old young]" || p.polls["old"] != 0 {
		t.Errorf("polls %v, cancels %v", p.polls, p.cancels)
	}
}

func TestTrackerNextDueHonoursTimeout(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(start)
	tr := &Tracker{First: 10 * time.Second, Ceiling: time.Minute, Clock: clk}
	p := newPlugin()
	ops := []Operation{op("a", start.Add(-57*time.Second))}
	_, next := tr.Step(context.Background(), "b1", ops, time.Minute, p)
	if next != 3*time.Second {
		t.Errorf("next due in %s, want 3s: the timeout comes before the next poll", next)
	}
}

func TestTrackerForgetStartsOver(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(start)
	tr := &Tracker{Clock: clk}
	p := newPlugin()
	ops := []Operation{op("a", start)}
	tr.Step(context.Background(), "b1", ops, 0, p)
	tr.Step(context.Background(), "b1", ops, 0, p)
	if p.polls["a"] != 1 {
		t.Fatalf("polled %d times before its interval passed", p.polls["a"])
	}
	tr.Forget("b1", ops)
	tr.Step(context.Background(), "b1", ops, 0, p)
	if p.polls["a"] != 2 {
		t.Errorf("polled %d times; a forgotten operation is due at once", p.polls["a"])
	}
}

func TestCancelAllAndCounts(t *testing.T) {
	p := newPlugin()
	done := op("done", start)
	done.Status.Phase = itemoperation.PhaseCompleted
	ops := []Operation{done, op("a", start), op("b", start)}
	CancelAll(context.Background(), ops, p, "backup deleted")
	if len(p.cancels) != 2 {
		t.Errorf("cancelled %v; a completed operation is not cancelled", p.cancels)
	}
	for _, o := range ops[1:] {
		if o.Status.Phase != itemoperation.PhaseFailed || o.Status.Error != "backup deleted" {
			t.Errorf("%s: %+v", o.OperationID, o.Status)
		}
	}
	if c, f, r := Counts(ops); c != 1 || f != 2 || r != 0 {
		t.Errorf("Counts = %d, %d, %d", c, f, r)
	}
}

// TestTrackerKeepsThePluginsTime: an operation's last update is the
// plugin's time of its figures when it gives one (a copy that ended
// between two backed-off polls ended then), never a time to come.
func TestTrackerKeepsThePluginsTime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		updated time.Time
		want    time.Time
	}{
		{"the plugin's", start.Add(-7 * time.Second), start.Add(-7 * time.Second)},
		{"none given: the poll's", time.Time{}, start},
		{"ahead of the server's clock: the poll's", start.Add(time.Minute), start},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &Tracker{Clock: clocktesting.NewFakePassiveClock(start)}
			p := newPlugin()
			p.progress["a"] = api.OperationProgress{Completed: true, NCompleted: 5, NTotal: 5, Updated: tc.updated}
			ops := []Operation{op("a", start.Add(-time.Minute))}
			tr.Step(context.Background(), "b1", ops, time.Hour, p)
			if got := ops[0].Status.Updated; got == nil || !got.Time.Equal(tc.want) {
				t.Errorf("updated %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTrackerPollsWhenTheEndIsDue: an operation whose figures say it ends
// before its backed-off next poll is asked again when it should end (never
// sooner than minPoll); one that says nothing of its end keeps the backoff.
func TestTrackerPollsWhenTheEndIsDue(t *testing.T) {
	started := metav1.NewTime(start.Add(-10 * time.Second))
	for _, tc := range []struct {
		name     string
		progress api.OperationProgress
		want     time.Duration
	}{
		{"10 of 12 done in 10 s: 2 s left", api.OperationProgress{NCompleted: 10, NTotal: 12, Started: started.Time}, 2 * time.Second},
		{"nearly done: not before minPoll", api.OperationProgress{NCompleted: 1000, NTotal: 1001, Started: started.Time}, minPoll},
		{"far from done: the backoff", api.OperationProgress{NCompleted: 1, NTotal: 100, Started: started.Time}, 8 * time.Second},
		{"no figures: the backoff", api.OperationProgress{}, 8 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &Tracker{First: 8 * time.Second, Ceiling: 10 * time.Second, Clock: clocktesting.NewFakePassiveClock(start)}
			p := newPlugin()
			p.progress["a"] = tc.progress
			ops := []Operation{op("a", start.Add(-10*time.Second))}
			if _, next := tr.Step(context.Background(), "b1", ops, time.Hour, p); next != tc.want {
				t.Errorf("next poll in %s, want %s", next, tc.want)
			}
		})
	}
}

// steady is a plugin whose operations make steady progress on a clock: each
// runs from its start for its duration, 1,000 units in all.
type steady struct {
	mu       sync.Mutex
	clk      *clocktesting.FakePassiveClock
	duration map[string]time.Duration
	polls    map[string][]time.Time
}

func (s *steady) Progress(_ context.Context, _, id string) (api.OperationProgress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clk.Now()
	s.polls[id] = append(s.polls[id], now)
	d := s.duration[id]
	done := min(int64(1000*now.Sub(start)/d), 1000)
	return api.OperationProgress{NCompleted: done, NTotal: 1000, Completed: done == 1000, Started: start, Updated: now}, nil
}

func (s *steady) Cancel(context.Context, string, string) error { return nil }

// TestTrackerSeesSteadyOperationsEndInTime runs 200 operations of 5 s to
// 205 s with steady progress, stepping the tracker whenever it asks: each
// end is seen within 2 s, no operation is polled twice within a second,
// and there are no more Progress calls than the backoff alone makes.
func TestTrackerSeesSteadyOperationsEndInTime(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(start)
	tr := &Tracker{Clock: clk}
	p := &steady{clk: clk, duration: map[string]time.Duration{}, polls: map[string][]time.Time{}}
	var ops []Operation
	for i := range 200 {
		id := fmt.Sprintf("op-%03d", i)
		// Durations that fall anywhere between two backoff polls.
		p.duration[id] = 5*time.Second + time.Duration(i)*time.Second + time.Duration(i*37%1000)*time.Millisecond
		ops = append(ops, op(id, start))
	}
	for guard := 0; guard < 10000; guard++ {
		_, next := tr.Step(context.Background(), "b1", ops, 0, p)
		if allEnded(ops) {
			break
		}
		clk.SetTime(clk.Now().Add(next))
	}
	if !allEnded(ops) {
		t.Fatal("operations never ended")
	}
	var calls, backoffCalls int
	for _, o := range ops {
		id, end := o.OperationID, start.Add(p.duration[o.OperationID])
		polls := p.polls[id]
		calls += len(polls)
		if seen := polls[len(polls)-1]; seen.Sub(end) > 2*time.Second {
			t.Errorf("%s ended at %s, seen %s later", id, end.Format(time.TimeOnly), seen.Sub(end))
		}
		for i := 1; i < len(polls); i++ {
			if gap := polls[i].Sub(polls[i-1]); gap < time.Second {
				t.Errorf("%s polled twice in %s", id, gap)
			}
		}
		// The backoff alone: at 0, then 1, 2, 4, 8, 10, 10 … s apart,
		// until a poll at or after the end.
		for at, gap := time.Duration(0), time.Second; ; gap = min(2*gap, 10*time.Second) {
			backoffCalls++
			if at >= p.duration[id] {
				break
			}
			at += gap
		}
	}
	if calls > backoffCalls {
		t.Errorf("%d Progress calls, more than the backoff's %d", calls, backoffCalls)
	}
	t.Logf("%d Progress calls (the backoff alone: %d)", calls, backoffCalls)
}

func allEnded(ops []Operation) bool {
	for _, o := range ops {
		if !Terminal(o.Status) {
			return false
		}
	}
	return true
}
