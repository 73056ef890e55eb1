package schedule

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		expr, zone, wantErr string
	}{
		{expr: "0 2 * * *", zone: "UTC"},
		{expr: "@daily", zone: "UTC"},
		{expr: "@every 90s", zone: "UTC"},
		{expr: "CRON_TZ=Europe/Paris 0 2 * * 1-5", zone: "Europe/Paris"},
		{expr: "TZ=America/New_York @hourly", zone: "America/New_York"},
		{expr: "0 2 * *", wantErr: "want five fields"},
		{expr: "0 2 * * * *", wantErr: "want five fields"},
		{expr: "61 2 * * *", wantErr: "above maximum"},
		{expr: "CRON_TZ=Nowhere/City 0 2 * * *", wantErr: `unknown time zone "Nowhere/City"`},
		{expr: "CRON_TZ=UTC", wantErr: "no schedule follows"},
		{expr: "", wantErr: "schedule is empty"},
		{expr: "@fortnightly", wantErr: "unrecognized descriptor"},
		{expr: "0 0 30 2 *", wantErr: "never comes"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			tm, err := Parse(tc.expr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse(%q) = %v, want an error containing %q", tc.expr, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tm.Zone.String() != tc.zone {
				t.Errorf("zone %s, want %s", tm.Zone, tc.zone)
			}
		})
	}
}

func TestZoneIsTheExpressionsNotTheServers(t *testing.T) {
	tm, err := Parse("CRON_TZ=Asia/Tokyo 0 9 * * *")
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	if got, want := tm.Next(from), time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("09:00 in Tokyo after %s: %s, want %s", from, got.UTC(), want)
	}
	utc, _ := Parse("0 9 * * *")
	if got, want := utc.Next(from), time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("09:00 without a zone: %s, want %s (UTC)", got.UTC(), want)
	}
}

func TestPlan(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	every3, _ := Parse("@every 3s")
	nightly, _ := Parse("CRON_TZ=Europe/Paris 0 2 * * *")
	s := time.Second
	for _, tc := range []struct {
		name             string
		timing           *Timing
		last, now        time.Time
		offset, deadline time.Duration
		want             Plan
	}{
		{name: "not yet", timing: every3, last: t0, now: t0.Add(s),
			want: Plan{Next: t0.Add(3 * s)}},
		{name: "due on time", timing: every3, last: t0, now: t0.Add(3 * s),
			want: Plan{Scheduled: t0.Add(3 * s), Run: t0.Add(3 * s), Next: t0.Add(6 * s)}},
		{name: "server was down: one run, the latest", timing: every3, last: t0, now: t0.Add(10 * s),
			want: Plan{Scheduled: t0.Add(9 * s), Run: t0.Add(9 * s), Missed: 2, Next: t0.Add(12 * s)}},
		{name: "past the starting deadline", timing: every3, last: t0, now: t0.Add(10 * s), deadline: s / 2,
			want: Plan{Scheduled: t0.Add(9 * s), Run: t0.Add(9 * s), Missed: 2, Late: true, Next: t0.Add(12 * s)}},
		{name: "within the starting deadline", timing: every3, last: t0, now: t0.Add(10 * s), deadline: 2 * s,
			want: Plan{Scheduled: t0.Add(9 * s), Run: t0.Add(9 * s), Missed: 2, Next: t0.Add(12 * s)}},
		{name: "jitter delays the run", timing: every3, last: t0, now: t0.Add(3*s + s/2), offset: s,
			want: Plan{Next: t0.Add(4 * s)}},
		{name: "jitter: due", timing: every3, last: t0, now: t0.Add(4 * s), offset: s,
			want: Plan{Scheduled: t0.Add(3 * s), Run: t0.Add(4 * s), Next: t0.Add(7 * s)}},
		{name: "nightly in Paris, two nights down", timing: nightly,
			last: time.Date(2026, 11, 20, 1, 0, 0, 0, time.UTC), now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
			want: Plan{Scheduled: time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC), Run: time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC),
				Missed: 1, Next: time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC)}},
		{name: "a month without a server, every second: the walk is bounded", timing: every3,
			last: t0.Add(-30 * 24 * time.Hour), now: t0,
			want: Plan{Scheduled: t0, Run: t0, Missed: maxMissed, Next: t0.Add(3 * s)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.timing.Plan(tc.last, tc.now, tc.offset, tc.deadline)
			if !got.Scheduled.Equal(tc.want.Scheduled) || !got.Run.Equal(tc.want.Run) || got.Missed != tc.want.Missed ||
				got.Late != tc.want.Late || !got.Next.Equal(tc.want.Next) {
				t.Errorf("Plan = %+v\nwant   %+v", got, tc.want)
			}
			if got.Due() != !tc.want.Scheduled.IsZero() {
				t.Errorf("Due() = %v", got.Due())
			}
		})
	}
}

func TestOffsetIsFixedPerScheduleAndBelowTheJitter(t *testing.T) {
	a, b := Offset("uid-a", time.Minute), Offset("uid-b", time.Minute)
	if a != Offset("uid-a", time.Minute) {
		t.Error("the offset of a schedule changed between calls")
	}
	if a == b {
		t.Errorf("two schedules got the same offset %s", a)
	}
	for _, o := range []time.Duration{a, b} {
		if o < 0 || o >= time.Minute || o != o.Truncate(time.Second) {
			t.Errorf("offset %s outside [0, 1m) or not whole seconds", o)
		}
	}
	if Offset("uid-a", 0) != 0 {
		t.Error("no jitter must mean no offset")
	}
}
