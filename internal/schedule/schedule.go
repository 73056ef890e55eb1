package schedule

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parser takes what Velero's schedules take: five fields, the @hourly-style
// macros and @every, with an optional CRON_TZ= (or TZ=) prefix.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Timing is a parsed spec.schedule.
type Timing struct {
	cron cron.Schedule
	// Zone is the zone the expression is read in (UTC unless CRON_TZ
	// names another); retention counts its days and weeks in it too.
	Zone *time.Location
}

// Parse reads a schedule expression, with a message that says what to fix.
func Parse(expr string) (*Timing, error) {
	expr = strings.TrimSpace(expr)
	zone := time.UTC
	rest := expr
	if p, ok := zonePrefix(expr); ok {
		name, after, found := strings.Cut(expr[len(p):], " ")
		if !found || strings.TrimSpace(after) == "" {
			return nil, fmt.Errorf("schedule %q: %s names a zone but no schedule follows it", expr, p+name)
		}
		loc, err := time.LoadLocation(name)
		if err != nil {
			return nil, fmt.Errorf("schedule %q: unknown time zone %q: use an IANA name such as Europe/Paris or America/New_York", expr, name)
		}
		zone, rest = loc, strings.TrimSpace(after)
	}
	if rest == "" {
		return nil, fmt.Errorf("schedule is empty: give a cron expression such as \"0 2 * * *\", a macro such as @daily, or \"@every 6h\"")
	}
	// The zone is always given to the parser: without one it would read
	// the expression in the server's local zone.
	c, err := parser.Parse("CRON_TZ=" + zone.String() + " " + rest)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %v: want five fields (minute hour day-of-month month day-of-week), a macro such as @daily, or \"@every 6h\"", expr, err)
	}
	if e, ok := c.(cron.ConstantDelaySchedule); ok && e.Delay < time.Second {
		return nil, fmt.Errorf("schedule %q: @every needs a duration of at least 1s", expr)
	}
	t := &Timing{cron: c, Zone: zone}
	if t.cron.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("schedule %q never comes (no such date in the next five years)", expr)
	}
	return t, nil
}

func zonePrefix(expr string) (string, bool) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if strings.HasPrefix(expr, p) {
			return p, true
		}
	}
	return "", false
}

// Next is the first scheduled time after t.
func (t *Timing) Next(after time.Time) time.Time { return t.cron.Next(after) }

// Offset is a schedule's jitter: a delay below jitter, the same for every
// run of the schedule (it comes from the schedule's UID), so that its runs
// keep their spacing and schedules created alike spread out. It is whole
// seconds, as the times a schedule's status keeps are: a run recorded to
// the second then gives back its scheduled time exactly.
func Offset(uid string, jitter time.Duration) time.Duration {
	if jitter <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(uid))
	return time.Duration(h.Sum64() % uint64(jitter)).Truncate(time.Second)
}

// Plan is what is due at a moment.
type Plan struct {
	// Scheduled is the scheduled time of the run due now (zero if none):
	// the latest scheduled time, jitter added, not after now.
	Scheduled time.Time
	// Run is when that run was due: Scheduled plus the jitter.
	Run time.Time
	// Missed counts the due runs before it that were passed over (the
	// server was down), at most maxMissed.
	Missed int
	// Late says the run is more than the starting deadline past its time:
	// it is skipped, not made.
	Late bool
	// Next is when the following run is due.
	Next time.Time
}

// Due reports whether a run is due.
func (p Plan) Due() bool { return !p.Scheduled.IsZero() }

const maxMissed = 1000

// Plan says what is due at now for a schedule whose last handled run was
// scheduled at last. Of several due runs only the latest is made: after
// the server was down the schedule catches up once, never in a burst.
func (t *Timing) Plan(last, now time.Time, offset, deadline time.Duration) Plan {
	var p Plan
	latest := t.latestDue(last, now, offset)
	if !latest.IsZero() {
		p.Scheduled, p.Run = latest, latest.Add(offset)
		for c := t.cron.Next(last); c.Before(latest) && p.Missed < maxMissed; c = t.cron.Next(c) {
			p.Missed++
		}
		p.Late = deadline > 0 && now.Sub(p.Run) > deadline
		last = latest
	}
	if n := t.cron.Next(last); !n.IsZero() {
		p.Next = n.Add(offset)
	}
	return p
}

// latestDue is the latest scheduled time after last whose run (jitter
// added) is not after now, or zero. It looks back over windows that
// double, so that a schedule of every second after a week without a
// server costs thousands of steps, not hundreds of thousands.
func (t *Timing) latestDue(last, now time.Time, offset time.Duration) time.Time {
	until := now.Add(-offset)
	if first := t.cron.Next(last); first.IsZero() || first.After(until) {
		return time.Time{}
	}
	for window := time.Minute; ; window *= 2 {
		from := until.Add(-window)
		if !from.After(last) {
			from = last
		}
		var latest time.Time
		for c := t.cron.Next(from); !c.IsZero() && !c.After(until); c = t.cron.Next(c) {
			latest = c
		}
		if !latest.IsZero() || from.Equal(last) {
			return latest
		}
	}
}
