package controller

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

func TestHealth(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	checked := func(name string, at time.Time) *salvorv1.BackupStorageLocation {
		l := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "salvor"}}
		if !at.IsZero() {
			m := metav1.NewTime(at)
			l.Status.LastValidationTime = &m
		}
		return l
	}
	for _, tc := range []struct {
		name            string
		synced, leading bool
		now             time.Time
		locations       []*salvorv1.BackupStorageLocation
		ready, live     string // "" for ok, else part of the error
	}{
		{name: "cache not synced", synced: false, now: t0, ready: "has not synced", live: ""},
		{name: "standby replica", synced: true, leading: false, now: t0.Add(time.Hour), locations: []*salvorv1.BackupStorageLocation{checked("a", t0)}},
		{name: "leading, checked recently", synced: true, leading: true, now: t0.Add(90 * time.Second),
			locations: []*salvorv1.BackupStorageLocation{checked("a", t0.Add(time.Minute)), checked("b", t0.Add(80*time.Second))}},
		{name: "leading, no locations", synced: true, leading: true, now: t0.Add(time.Hour)},
		{name: "a location never checked, just started leading", synced: true, leading: true, now: t0.Add(time.Minute),
			locations: []*salvorv1.BackupStorageLocation{checked("new", time.Time{})}},
		{name: "checks stopped: not ready", synced: true, leading: true, now: t0.Add(5 * time.Minute),
			locations: []*salvorv1.BackupStorageLocation{checked("a", t0.Add(4*time.Minute)), checked("stuck", t0.Add(time.Second))},
			ready:     "backup storage location stuck was last checked 4m59s ago (every 1m0s)"},
		{name: "checks stopped long ago: not live", synced: true, leading: true, now: t0.Add(time.Hour),
			locations: []*salvorv1.BackupStorageLocation{checked("stuck", t0)},
			ready:     "the location checks are not running", live: "the location checks are not running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			locations := func(context.Context) ([]salvorv1.BackupStorageLocation, error) {
				var out []salvorv1.BackupStorageLocation
				for _, l := range tc.locations {
					out = append(out, *l)
				}
				return out, nil
			}
			h := &Health{Synced: func(context.Context) bool { return tc.synced }, Locations: locations, Namespace: "salvor",
				Interval: time.Minute, Now: func() time.Time { return t0 }}
			if tc.leading {
				h.Lead()
			}
			h.Now = func() time.Time { return tc.now }
			req := httptest.NewRequest("GET", "/readyz", nil)
			for probe, want := range map[string]string{"ready": tc.ready, "live": tc.live} {
				check := h.Ready
				if probe == "live" {
					check = h.Live
				}
				err := check(req)
				switch {
				case want == "" && err != nil:
					t.Errorf("%s: %v", probe, err)
				case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
					t.Errorf("%s: %v, want an error containing %q", probe, err, want)
				}
			}
		})
	}
}

// TestCacheSyncedNeedsTheServersObjects: a started cache whose user may list
// nothing is not synced — the cache alone calls itself synced while it has
// made no informer, and a server that could not see its objects answered
// ready (TestInstallRBACIsEnough caught it in CI); a cache that can list
// them becomes synced.
func TestCacheSyncedNeedsTheServersObjects(t *testing.T) {
	cfg := testbed.SharedControlPlane(t)
	scheme := runtime.NewScheme()
	if err := salvorv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := func(cfg *rest.Config) cache.Cache {
		c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{"salvor": {}}})
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = c.Start(ctx) }()
		return c
	}
	nobody := rest.CopyConfig(cfg)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
	denied := start(nobody)
	if !denied.WaitForCacheSync(ctx) {
		t.Fatal("the cache without informers never started")
	}
	for range 3 {
		if CacheSynced(denied)(ctx) {
			t.Fatal("a cache that may not list backups or locations is synced")
		}
	}
	allowed := start(cfg)
	deadline := time.Now().Add(time.Minute)
	for !CacheSynced(allowed)(ctx) {
		if time.Now().After(deadline) {
			t.Fatal("a cache that may list the server's objects never synced")
		}
	}
}
