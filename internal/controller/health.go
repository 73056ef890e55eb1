package controller

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheSynced says, within a second, whether c holds the server's objects:
// the informers of the kinds every server reads (backup storage locations
// and backups) and every other informer it has made have synced. Asking
// the cache alone is not enough: a started cache that has made no
// informer yet — the moments before the controllers start, or a standby
// replica — reports itself synced, and a server whose role cannot list
// anything would answer ready.
func CacheSynced(c cache.Cache) func(ctx context.Context) bool {
	return func(ctx context.Context) bool {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		for _, o := range []client.Object{&salvorv1.BackupStorageLocation{}, &salvorv1.Backup{}} {
			inf, err := c.GetInformer(ctx, o, cache.BlockUntilSynced(false))
			if err != nil || !inf.HasSynced() {
				return false
			}
		}
		return c.WaitForCacheSync(ctx)
	}
}

// Health answers /readyz and /healthz from what the server does, not from
// whether its process is up: the cache it reconciles from has synced, and,
// on the leading replica, every backup storage location was checked
// recently — the location checks run on the interval, so a stale one means
// the controllers are stuck, or lack the rights to write status.
type Health struct {
	// Cache has synced when the server can see its objects (it never does
	// when, say, its role lacks list on them).
	Synced func(ctx context.Context) bool
	// Locations lists the backup storage locations (from the cache).
	Locations func(ctx context.Context) ([]salvorv1.BackupStorageLocation, error)
	Namespace string
	// Interval is the location check interval.
	Interval time.Duration
	Now      func() time.Time
	// Log hears why the server is not ready or live (the probe's answer
	// withholds it), once per change of reason.
	Log *slog.Logger

	mu      sync.Mutex
	leading time.Time
	said    string
}

// Lead records that this replica leads from now: its controllers run.
func (h *Health) Lead() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.leading = h.now()
}

func (h *Health) now() time.Time {
	if h.Now == nil {
		return time.Now()
	}
	return h.Now()
}

// Ready fails until the cache has synced and while a location check is
// more than three intervals late.
func (h *Health) Ready(r *http.Request) error {
	return h.say("not ready", h.check(r.Context(), 3*h.Interval+30*time.Second))
}

// say logs a failing probe's reason when it changes.
func (h *Health) say(what string, err error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	reason := ""
	if err != nil {
		reason = what + ": " + err.Error()
	}
	if reason != h.said && h.Log != nil {
		if err != nil {
			h.Log.Warn("server "+what, "reason", err.Error())
		} else {
			h.Log.Info("server ready and live again")
		}
	}
	h.said = reason
	return err
}

// Live fails when the location checks have stopped for much longer (ten
// intervals and five minutes): restarting the server is then the remedy.
func (h *Health) Live(r *http.Request) error {
	if !h.Synced(r.Context()) {
		return nil // starting up: readiness says so; a restart would not help
	}
	return h.say("not live", h.check(r.Context(), 10*h.Interval+5*time.Minute))
}

func (h *Health) check(ctx context.Context, slack time.Duration) error {
	if !h.Synced(ctx) {
		return fmt.Errorf("the server's cache of its objects in namespace %s has not synced: check its role allows list and watch on salvor.dev resources there", h.Namespace)
	}
	h.mu.Lock()
	leading := h.leading
	h.mu.Unlock()
	if leading.IsZero() {
		return nil // a standby replica: nothing of its own runs
	}
	now := h.now()
	locations, err := h.Locations(ctx)
	if err != nil {
		return fmt.Errorf("listing backup storage locations: %w", err)
	}
	for _, l := range locations {
		last := leading
		if t := l.Status.LastValidationTime; t != nil && t.After(last) {
			last = t.Time
		}
		if late := now.Sub(last); late > slack {
			return fmt.Errorf("backup storage location %s was last checked %s ago (every %s): the location checks are not running", l.Name, late.Round(time.Second), h.Interval)
		}
	}
	return nil
}

// CachedLocations lists the locations in namespace through c.
func CachedLocations(c client.Reader, namespace string) func(ctx context.Context) ([]salvorv1.BackupStorageLocation, error) {
	return func(ctx context.Context) ([]salvorv1.BackupStorageLocation, error) {
		list := &salvorv1.BackupStorageLocationList{}
		err := c.List(ctx, list, client.InNamespace(namespace))
		return list.Items, err
	}
}
