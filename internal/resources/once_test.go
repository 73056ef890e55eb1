package resources

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// countingDiscovery answers with one served group and one failed group,
// counting the questions.
type countingDiscovery struct {
	discovery.DiscoveryInterface
	calls int
	// crd, once set, serves a custom resource as well (a restore made its
	// definition).
	crd bool
}

func (c *countingDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	c.calls++
	lists := []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"get", "list"}}}}}
	if c.crd {
		lists = append(lists, &metav1.APIResourceList{GroupVersion: "example.io/v1", APIResources: []metav1.APIResource{
			{Name: "gears", Kind: "Gear", Namespaced: true, Verbs: []string{"get", "list", "create"}}}})
	}
	return lists, &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("503")}}
}

// TestOnceAsksOncePerRun: every discovery of a run through one Once is one
// question to the API server, with the same answer (a group that failed
// stays failed for the run); the next run's Once asks again.
func TestOnceAsksOncePerRun(t *testing.T) {
	api := &countingDiscovery{}
	run := Once(api)
	for i := range 3 {
		served, unavailable, err := Discover(run)
		if err != nil || len(served) != 1 || served[0].GVR.Resource != "configmaps" ||
			len(unavailable) != 1 || unavailable[0].GroupVersion.Group != "metrics.k8s.io" {
			t.Fatalf("discovery %d of the run: %v %v %v", i+1, served, unavailable, err)
		}
	}
	if api.calls != 1 {
		t.Fatalf("one run asked the API server %d times, want once", api.calls)
	}
	if _, _, err := Discover(Once(api)); err != nil || api.calls != 2 {
		t.Fatalf("the next run: %v, %d questions in all, want 2", err, api.calls)
	}
}

// TestAgainSeesWhatTheRunMade: a restore that made a custom resource
// definition asks again (Again) until its resource is served; what the run
// reads through its Once afterwards sees it too, without asking again.
func TestAgainSeesWhatTheRunMade(t *testing.T) {
	api := &countingDiscovery{}
	run := Once(api)
	if served, _, _ := Discover(run); len(served) != 1 {
		t.Fatalf("before the definition: %v", served)
	}
	api.crd = true
	if served, _, _ := Discover(run); len(served) != 1 {
		t.Fatalf("through the Once, the run's first answer stands: %v", served)
	}
	if served, _, _ := Discover(Again(run)); len(served) != 2 {
		t.Fatalf("asked again: %v, want the custom resource too", served)
	}
	if served, _, _ := Discover(run); len(served) != 2 || api.calls != 2 {
		t.Fatalf("through the Once after asking again: %v after %d questions, want 2 resources after 2", served, api.calls)
	}
	if d := Again(api); d != discovery.DiscoveryInterface(api) {
		t.Fatalf("Again of a plain client is %T, want the client itself", d)
	}
}
