package backup

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/restore"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// listRequests counts the LIST requests a client sends and the limits
// they ask for.
type listRequests struct {
	mu     sync.Mutex
	limits []string
	next   http.RoundTripper
}

func (l *listRequests) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && req.URL.Query().Has("limit") {
		l.mu.Lock()
		l.limits = append(l.limits, req.URL.Query().Get("limit"))
		l.mu.Unlock()
	}
	return l.next.RoundTrip(req)
}

// listClient is the client the server gives the engine (restore's).
func listClient(t *testing.T, cfg *rest.Config) rest.Interface {
	t.Helper()
	client, err := restore.NewCreateClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// listed runs list with a queue of its own and returns the names of the
// items it queued, sorted.
func listed(list func(chan<- work) error) ([]string, error) {
	queue := make(chan work)
	var got []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for w := range queue {
			got = append(got, w.item.name())
		}
	}()
	err := list(queue)
	close(queue)
	<-done
	slices.Sort(got)
	return got, err
}

// TestListPages lists a namespace's ConfigMaps page by page as the
// engine's PageSize says (the server's --client-page-size): every item
// arrives whatever the size, in as many requests as pages; a negative
// size lists them in one request without a limit.
func TestListPages(t *testing.T) {
	cfg := testbed.SharedControlPlane(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pages"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 5 {
		name := fmt.Sprintf("cm-%d", i)
		want = append(want, name)
		if _, err := cs.CoreV1().ConfigMaps("pages").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	res := resources.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}

	for _, tc := range []struct {
		pageSize int64
		limits   []string
	}{
		{2, []string{"2", "2", "2"}},
		{0, []string{"500"}},
		{-1, []string{"0"}},
	} {
		counter := &listRequests{}
		c := rest.CopyConfig(cfg)
		c.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
		r := &run{e: &Engine{REST: listClient(t, c), PageSize: tc.pageSize}}
		got, err := listed(func(queue chan<- work) error {
			return r.listScope(ctx, res, "pages", "", func(*item) bool { return true }, queue)
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || !slices.Equal(counter.limits, tc.limits) {
			t.Errorf("page size %d: listed %v in requests with limits %v; want %v with limits %v", tc.pageSize, got, counter.limits, want, tc.limits)
		}
	}
}

// TestListByEitherSelector lists with Velero's orLabelSelectors: one LIST
// per selector (the API server filters by one), each item once, however
// many selectors it matches.
func TestListByEitherSelector(t *testing.T) {
	cfg := testbed.SharedControlPlane(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "either"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]map[string]string{
		"web": {"app": "web", "tier": "front"}, "db": {"app": "db", "tier": "data"}, "cache": {"app": "cache", "tier": "data"}, "batch": {"app": "batch"},
	} {
		if _, err := cs.CoreV1().ConfigMaps("either").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	spec := salvorv1.BackupSpec{IncludedNamespaces: []string{"either"},
		OrLabelSelectors: []*metav1.LabelSelector{{MatchLabels: map[string]string{"tier": "data"}}, {MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "db"}}}}}}
	selectors, err := filters(spec).Selectors()
	if err != nil {
		t.Fatal(err)
	}
	r := &run{e: &Engine{REST: listClient(t, cfg)}, backup: &salvorv1.Backup{Spec: spec}}
	res := resources.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	got, err := listed(func(queue chan<- work) error {
		return r.list(ctx, []resources.Resource{res}, []string{"either"}, selectors, queue)
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cache", "db", "web"}; !slices.Equal(got, want) || r.total.Load() != 3 {
		t.Errorf("listed %v (total %d), want %v once each", got, r.total.Load(), want)
	}
}
