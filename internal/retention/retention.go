package retention

import (
	"fmt"
	"sort"
	"time"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Backup is what retention looks at of a backup.
type Backup struct {
	Name  string
	Time  time.Time
	Phase salvorv1.BackupPhase
}

// Decision is what retention says of one backup.
type Decision struct {
	Backup
	// KeptBy names the rules that keep the backup, e.g. "daily 2026-11-20";
	// empty when none does.
	KeptBy []string
	// Managed says retention decides the backup's fate: a backup it
	// manages and keeps by no rule is deleted. Unfinished backups, and
	// the kinds no rule is set for (Completed ones without period rules,
	// failed ones without keepFailed), are left to their TTL.
	Managed bool
}

// Delete says the backup is to be deleted now.
func (d Decision) Delete() bool { return d.Managed && len(d.KeptBy) == 0 }

// NewestCompleted is the rule that always keeps a schedule's newest
// Completed backup.
const NewestCompleted = "newest Completed"

func failed(p salvorv1.BackupPhase) bool {
	switch p {
	case salvorv1.BackupPhaseFailed, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailedValidation:
		return true
	}
	return false
}

// periodRule is one grandfather-father-son rule: how many periods, and the
// period a time falls in.
type periodRule struct {
	name   string
	count  int
	period func(time.Time) string
}

// Decide says which backups p keeps; periods are counted in zone. The
// decisions come newest first.
func Decide(p salvorv1.Retention, backups []Backup, zone *time.Location) []Decision {
	if zone == nil {
		zone = time.UTC
	}
	out := make([]Decision, len(backups))
	for i, b := range backups {
		out[i] = Decision{Backup: b}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.After(out[j].Time)
		}
		return out[i].Name > out[j].Name
	})
	rules := []periodRule{
		{"hourly", p.Hourly, func(t time.Time) string { return t.Format("2006-01-02T15 MST") }},
		{"daily", p.Daily, func(t time.Time) string { return t.Format("2006-01-02") }},
		{"weekly", p.Weekly, func(t time.Time) string { y, w := t.ISOWeek(); return fmt.Sprintf("%d-W%02d", y, w) }},
		{"monthly", p.Monthly, func(t time.Time) string { return t.Format("2006-01") }},
		{"yearly", p.Yearly, func(t time.Time) string { return t.Format("2006") }},
	}
	goodManaged := p.KeepLast > 0
	for _, r := range rules {
		goodManaged = goodManaged || r.count > 0
	}
	var good, bad []*Decision
	for i := range out {
		switch d := &out[i]; {
		case d.Phase == salvorv1.BackupPhaseCompleted:
			d.Managed = goodManaged
			good = append(good, d)
		case failed(d.Phase):
			d.Managed = p.KeepFailed != nil
			bad = append(bad, d)
		}
	}
	if len(good) > 0 {
		good[0].KeptBy = append(good[0].KeptBy, NewestCompleted)
	}
	for i, d := range good {
		if i < p.KeepLast {
			d.KeptBy = append(d.KeptBy, fmt.Sprintf("last %d", i+1))
		}
	}
	for _, r := range rules {
		seen := map[string]bool{}
		for _, d := range good {
			if len(seen) == r.count {
				break
			}
			key := r.period(d.Time.In(zone))
			if !seen[key] {
				seen[key] = true
				d.KeptBy = append(d.KeptBy, r.name+" "+key)
			}
		}
	}
	if p.KeepFailed != nil {
		for i, d := range bad {
			if i < *p.KeepFailed {
				d.KeptBy = append(d.KeptBy, fmt.Sprintf("failed %d", i+1))
			}
		}
	}
	return out
}

// View is what retention looks at of a backup: its start (its creation
// before it starts) and phase.
func View(b salvorv1.Backup) Backup {
	t := b.CreationTimestamp.Time
	if b.Status.StartTimestamp != nil {
		t = b.Status.StartTimestamp.Time
	}
	return Backup{Name: b.Name, Time: t, Phase: b.Status.Phase}
}

// ByLocation groups the backups of a schedule that retention decides on by
// their location: each location keeps its own newest Completed backup.
// Backups being deleted are left out, and so are those synced from a
// location: they are another cluster's (or this one's before a rebuild),
// and their TTL decides.
func ByLocation(backups []salvorv1.Backup) map[string][]Backup {
	out := map[string][]Backup{}
	for _, b := range backups {
		if b.DeletionTimestamp != nil || b.Annotations[salvorv1.SyncedAnnotation] != "" {
			continue
		}
		out[b.Spec.StorageLocation] = append(out[b.Spec.StorageLocation], View(b))
	}
	return out
}
