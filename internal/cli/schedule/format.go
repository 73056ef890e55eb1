package schedule

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/salvor-dev/salvor/internal/retention"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func phase(s salvorv1.Schedule) string {
	if s.Status.Phase == "" {
		return string(salvorv1.SchedulePhaseNew)
	}
	return string(s.Status.Phase)
}

func phase2(b salvorv1.Backup) string {
	if b.Status.Phase == "" {
		return string(salvorv1.BackupPhaseNew)
	}
	return string(b.Status.Phase)
}

func orDefault(s string) string {
	if s == "" {
		return "the default"
	}
	return s
}

func ttl(d time.Duration) string {
	if d == 0 {
		return "the server's"
	}
	return d.String()
}

func retentionText(r *salvorv1.Retention) string {
	if r == nil {
		return "none: each backup's TTL decides"
	}
	var parts []string
	for _, p := range []struct {
		name string
		n    int
	}{{"last", r.KeepLast}, {"hourly", r.Hourly}, {"daily", r.Daily}, {"weekly", r.Weekly}, {"monthly", r.Monthly}, {"yearly", r.Yearly}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", p.name, p.n))
		}
	}
	if r.KeepFailed != nil {
		parts = append(parts, fmt.Sprintf("failed %d", *r.KeepFailed))
	}
	if len(parts) == 0 {
		return "the newest Completed backup only; TTL for the rest"
	}
	return "keep " + strings.Join(parts, ", ")
}

func expiry(b salvorv1.Backup) string {
	if b.Status.Expiration == nil {
		return "-"
	}
	return "expires " + b.Status.Expiration.UTC().Format(time.RFC3339) + " (TTL)"
}

func newestFirst(backups []salvorv1.Backup) []salvorv1.Backup {
	out := append([]salvorv1.Backup(nil), backups...)
	sort.SliceStable(out, func(i, j int) bool {
		return retention.View(out[i]).Time.After(retention.View(out[j]).Time)
	})
	return out
}
