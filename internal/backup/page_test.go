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
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/testbed"
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

// TestListPages lists a namespace's ConfigMaps page by page as the
// engine's PageSize says (the server's --client-page-size): every item
// arrives whatever the size, in as many requests as pages; a negative
// size lists them in one request without a limit.
func TestListPages(t *testing.T) {
	cfg := testbed.ControlPlane(t)
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
		c.ContentType, c.AcceptContentTypes = "application/json", "application/json"
		c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
		c.APIPath, c.GroupVersion = "", nil
		c.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
		client, err := rest.UnversionedRESTClientFor(c)
		if err != nil {
			t.Fatal(err)
		}
		r := &run{e: &Engine{REST: client, PageSize: tc.pageSize}}
		queue := make(chan work)
		var got []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			for w := range queue {
				got = append(got, w.item.name())
			}
		}()
		err = r.listScope(ctx, res, "pages", "", func(*item) bool { return true }, queue)
		close(queue)
		<-done
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) || !slices.Equal(counter.limits, tc.limits) {
			t.Errorf("page size %d: listed %v in requests with limits %v; want %v with limits %v", tc.pageSize, got, counter.limits, want, tc.limits)
		}
	}
}
