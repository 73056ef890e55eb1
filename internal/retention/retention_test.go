package retention

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

const (
	ok      = salvorv1.BackupPhaseCompleted
	partial = salvorv1.BackupPhasePartiallyFailed
	failedP = salvorv1.BackupPhaseFailed
	running = salvorv1.BackupPhaseInProgress
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func name(t time.Time) string { return "s-" + t.UTC().Format("20060102150405") }

// runs makes a backup every step from first up to last.
func runs(first, last time.Time, step time.Duration, phase func(i int) salvorv1.BackupPhase) []Backup {
	var out []Backup
	for i, t := 0, first; !t.After(last); i, t = i+1, t.Add(step) {
		out = append(out, Backup{Name: name(t), Time: t, Phase: phase(i)})
	}
	return out
}

func allOK(int) salvorv1.BackupPhase { return ok }

func ptr(i int) *int { return &i }

// kept returns what the decisions keep, name → rules, and what they delete.
func kept(ds []Decision) (map[string]string, []string) {
	keep := map[string]string{}
	var del []string
	for _, d := range ds {
		if len(d.KeptBy) > 0 {
			keep[d.Name] = strings.Join(d.KeptBy, ", ")
		}
		if d.Delete() {
			del = append(del, d.Name)
		}
	}
	sort.Strings(del)
	return keep, del
}

func TestDecide(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		policy  salvorv1.Retention
		backups []Backup
		zone    *time.Location
		keep    map[string]string
		deleted int // how many are deleted; every one not kept, when managed
	}{{
		name:    "a year of hourly runs, grandfather-father-son",
		policy:  salvorv1.Retention{KeepLast: 2, Daily: 3, Weekly: 2, Monthly: 2, Yearly: 1},
		backups: runs(at("2025-01-01T00:00:00Z"), at("2025-12-31T23:00:00Z"), time.Hour, allOK),
		keep: map[string]string{
			"s-20251231230000": "newest Completed, last 1, daily 2025-12-31, weekly 2026-W01, monthly 2025-12, yearly 2025",
			"s-20251231220000": "last 2",
			"s-20251230230000": "daily 2025-12-30",
			"s-20251229230000": "daily 2025-12-29",
			"s-20251228230000": "weekly 2025-W52",
			"s-20251130230000": "monthly 2025-11",
		},
		deleted: 8760 - 6,
	}, {
		name:   "three years of daily runs with partial failures mixed in: periods keep their newest Completed",
		policy: salvorv1.Retention{Monthly: 3, Yearly: 3},
		backups: runs(at("2024-01-01T02:00:00Z"), at("2026-11-30T02:00:00Z"), 24*time.Hour, func(i int) salvorv1.BackupPhase {
			// The last day of every month fails partly here.
			if d := at("2024-01-01T02:00:00Z").AddDate(0, 0, i+1); d.Day() == 1 {
				return partial
			}
			return ok
		}),
		keep: map[string]string{
			"s-20261129020000": "newest Completed, monthly 2026-11, yearly 2026",
			"s-20261030020000": "monthly 2026-10",
			"s-20260929020000": "monthly 2026-09",
			"s-20251230020000": "yearly 2025",
			"s-20241230020000": "yearly 2024",
		},
		// Partly failed ones are not managed without keepFailed: their TTL decides.
		deleted: 1065 - 35 - 5,
	}, {
		name:   "all recent runs failed: the newest Completed stays, failed ones are counted apart",
		policy: salvorv1.Retention{KeepLast: 2, KeepFailed: ptr(1)},
		backups: []Backup{
			{Name: "old", Time: at("2026-11-01T00:00:00Z"), Phase: ok},
			{Name: "good", Time: at("2026-11-02T00:00:00Z"), Phase: ok},
			{Name: "f1", Time: at("2026-11-03T00:00:00Z"), Phase: failedP},
			{Name: "f2", Time: at("2026-11-04T00:00:00Z"), Phase: partial},
			{Name: "f3", Time: at("2026-11-05T00:00:00Z"), Phase: salvorv1.BackupPhaseFailedValidation},
			{Name: "now", Time: at("2026-11-06T00:00:00Z"), Phase: running},
		},
		keep:    map[string]string{"good": "newest Completed, last 1", "old": "last 2", "f3": "failed 1"},
		deleted: 2,
	}, {
		name:   "only keepFailed: Completed ones are left to their TTL, the newest kept from it",
		policy: salvorv1.Retention{KeepFailed: ptr(0)},
		backups: []Backup{
			{Name: "c1", Time: at("2026-11-01T00:00:00Z"), Phase: ok},
			{Name: "c2", Time: at("2026-11-02T00:00:00Z"), Phase: ok},
			{Name: "f1", Time: at("2026-11-03T00:00:00Z"), Phase: failedP},
		},
		keep:    map[string]string{"c2": "newest Completed"},
		deleted: 1,
	}, {
		name:   "a week boundary: Sunday night and Monday morning are two ISO weeks",
		policy: salvorv1.Retention{Weekly: 2},
		backups: []Backup{
			{Name: "sat", Time: at("2026-11-21T23:00:00Z"), Phase: ok},
			{Name: "sun", Time: at("2026-11-22T23:59:59Z"), Phase: ok},
			{Name: "mon", Time: at("2026-11-23T00:00:01Z"), Phase: ok},
		},
		keep:    map[string]string{"mon": "newest Completed, weekly 2026-W48", "sun": "weekly 2026-W47"},
		deleted: 1,
	}, {
		name: "days are the zone's: 23:30 in New York across the spring DST change",
		// 23:30 EST is 04:30 UTC the next day, 23:30 EDT 03:30: in UTC
		// every one of these falls on the following day.
		policy: salvorv1.Retention{Daily: 3},
		zone:   ny,
		backups: []Backup{
			{Name: "mar06", Time: at("2026-03-07T04:30:00Z"), Phase: ok},
			{Name: "mar07", Time: at("2026-03-08T04:30:00Z"), Phase: ok},
			{Name: "mar08", Time: at("2026-03-09T03:30:00Z"), Phase: ok},
			{Name: "mar09-early", Time: at("2026-03-09T05:00:00Z"), Phase: ok}, // 01:00 EDT on the 9th
			{Name: "mar09", Time: at("2026-03-10T03:30:00Z"), Phase: ok},
		},
		keep: map[string]string{
			"mar09": "newest Completed, daily 2026-03-09",
			"mar08": "daily 2026-03-08",
			"mar07": "daily 2026-03-07",
		},
		deleted: 2,
	}, {
		name: "the hour repeated when DST ends is two hours",
		// 01:30 EDT and 01:30 EST on 2026-11-01.
		policy: salvorv1.Retention{Hourly: 2},
		zone:   ny,
		backups: []Backup{
			{Name: "edt", Time: at("2026-11-01T05:30:00Z"), Phase: ok},
			{Name: "est", Time: at("2026-11-01T06:30:00Z"), Phase: ok},
		},
		keep:    map[string]string{"est": "newest Completed, hourly 2026-11-01T01 EST", "edt": "hourly 2026-11-01T01 EDT"},
		deleted: 0,
	}, {
		name:    "irregular runs: hours without a backup do not count",
		policy:  salvorv1.Retention{Hourly: 3},
		backups: []Backup{{Name: "a", Time: at("2026-11-23T01:10:00Z"), Phase: ok}, {Name: "b", Time: at("2026-11-23T01:50:00Z"), Phase: ok}, {Name: "c", Time: at("2026-11-23T07:00:00Z"), Phase: ok}, {Name: "d", Time: at("2026-11-20T12:00:00Z"), Phase: ok}, {Name: "e", Time: at("2026-11-19T12:00:00Z"), Phase: ok}},
		keep:    map[string]string{"c": "newest Completed, hourly 2026-11-23T07 UTC", "b": "hourly 2026-11-23T01 UTC", "d": "hourly 2026-11-20T12 UTC"},
		deleted: 2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ds := Decide(tc.policy, tc.backups, tc.zone)
			keep, del := kept(ds)
			if !reflect.DeepEqual(keep, tc.keep) {
				t.Errorf("kept:\n%v\nwant\n%v", keep, tc.keep)
			}
			if len(del) != tc.deleted {
				t.Errorf("%d deleted, want %d", len(del), tc.deleted)
			}
			for _, d := range ds {
				if d.Delete() && (d.Phase == running || d.Phase == "") {
					t.Errorf("an unfinished backup %s would be deleted", d.Name)
				}
			}
			for i := 1; i < len(ds); i++ {
				if ds[i].Time.After(ds[i-1].Time) {
					t.Fatalf("decisions not newest first at %d", i)
				}
			}
		})
	}
}

// TestNewestCompletedIsNeverDeleted checks the one promise against every
// policy small enough to enumerate.
func TestNewestCompletedIsNeverDeleted(t *testing.T) {
	phases := []salvorv1.BackupPhase{ok, partial, failedP, running}
	var backups []Backup
	for i := 0; i < 40; i++ {
		tm := at("2026-01-01T00:00:00Z").Add(time.Duration(i*i) * 37 * time.Minute)
		backups = append(backups, Backup{Name: fmt.Sprint(i), Time: tm, Phase: phases[(i*7)%len(phases)]})
	}
	newest := ""
	for _, b := range backups {
		if b.Phase == ok {
			newest = b.Name // times grow with i
		}
	}
	for n := 0; n < 3; n++ {
		for _, p := range []salvorv1.Retention{{KeepLast: n}, {Hourly: n}, {Daily: n}, {Weekly: n}, {Monthly: n}, {Yearly: n}, {KeepFailed: ptr(n)}} {
			for _, d := range Decide(p, backups, nil) {
				if d.Name == newest && (d.Delete() || len(d.KeptBy) == 0) {
					t.Errorf("policy %+v does not keep the newest Completed backup", p)
				}
			}
		}
	}
}
