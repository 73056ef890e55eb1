package controller

import (
	"strings"
	"time"

	"github.com/salvor-dev/salvor/internal/metrics"
	"github.com/salvor-dev/salvor/internal/operations"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// summaries lists the running operations for the Backup's status.
func summaries(view []operations.Operation) []salvorv1.OperationSummary {
	var out []salvorv1.OperationSummary
	for _, op := range view {
		if operations.Terminal(op.Status) || len(out) == 50 {
			continue
		}
		out = append(out, salvorv1.OperationSummary{
			Plugin: op.Plugin, Item: op.Item, OperationID: op.OperationID,
			NCompleted: op.Status.NCompleted, NTotal: op.Status.NTotal, Units: op.Status.OperationUnits, Description: op.Status.Description,
			Phase: string(op.Status.Phase), Updated: op.Status.Updated,
		})
	}
	return out
}

// observe updates the in-flight metric and the duration of ended operations.
func (r *OperationsReconciler) observe(key string, view []operations.Operation) {
	counts := map[string]flight{}
	for _, op := range view {
		if !operations.Terminal(op.Status) {
			f := counts[op.Plugin]
			f.n++
			if c := op.Status.Created; c != nil && (f.oldest.IsZero() || c.Time.Before(f.oldest)) {
				f.oldest = c.Time
			}
			counts[op.Plugin] = f
			continue
		}
		if op.Status.Created != nil && op.Status.Updated != nil && r.ended(key, op) {
			metrics.OperationDuration.WithLabelValues(op.Plugin, string(op.Status.Phase)).Observe(op.Status.Updated.Sub(op.Status.Created.Time).Seconds())
			if strings.HasPrefix(op.Status.Error, "timed out after") {
				metrics.OperationTimeouts.WithLabelValues(op.Plugin).Inc()
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setInFlight(key, counts)
}

// ended reports an operation's end once.
func (r *OperationsReconciler) ended(key string, op operations.Operation) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seenEnd == nil {
		r.seenEnd = map[string]bool{}
	}
	k := key + "\x00" + op.Plugin + "\x00" + op.OperationID
	if r.seenEnd[k] {
		return false
	}
	r.seenEnd[k] = true
	return true
}

// flight is a backup's running operations of one plugin: how many, and
// when the oldest started.
type flight struct {
	n      int
	oldest time.Time
}

// setInFlight records a backup's running operations per plugin and sets
// the gauges over all backups: how many, and when the oldest started.
// Call with r.mu held.
func (r *OperationsReconciler) setInFlight(key string, counts map[string]flight) {
	if r.inFlight == nil {
		r.inFlight = map[string]map[string]flight{}
	}
	plugins := map[string]bool{}
	for p := range r.inFlight[key] {
		plugins[p] = true
	}
	if counts == nil {
		delete(r.inFlight, key)
	} else {
		r.inFlight[key] = counts
	}
	for p := range counts {
		plugins[p] = true
	}
	for p := range plugins {
		var total flight
		for _, c := range r.inFlight {
			total.n += c[p].n
			if o := c[p].oldest; !o.IsZero() && (total.oldest.IsZero() || o.Before(total.oldest)) {
				total.oldest = o
			}
		}
		metrics.OperationsInFlight.WithLabelValues(p).Set(float64(total.n))
		if total.oldest.IsZero() {
			metrics.OperationOldest.DeleteLabelValues(p)
		} else {
			metrics.OperationOldest.WithLabelValues(p).Set(float64(total.oldest.UnixNano()) / 1e9)
		}
	}
}
