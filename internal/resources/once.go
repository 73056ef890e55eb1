package resources

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// Once returns d asking the API server for the cluster's preferred
// resources at most once: a run (a backup's validation and its pass, a
// restore's) reads them through one Once, so every decision of the run
// sees the same answer and the API server is asked once. The answer,
// failed groups included, is kept for the life of the value (or until
// Again asks anew): make one per run, never one per server.
func Once(d discovery.DiscoveryInterface) discovery.DiscoveryInterface {
	return &once{DiscoveryInterface: d}
}

type once struct {
	discovery.DiscoveryInterface
	mu    sync.Mutex
	asked bool
	lists []*metav1.APIResourceList
	err   error
}

func (o *once) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.asked {
		o.lists, o.err = o.DiscoveryInterface.ServerPreferredResources()
		o.asked = true
	}
	return o.lists, o.err
}

// Again returns d asking the API server anew at every call, for the part
// of a run that waits for what the run itself changed: a restore that made
// custom resource definitions waits for their resources to be served.
// When d is a Once, the Once keeps each new answer, so what the run reads
// through it afterwards sees the resources it waited for.
func Again(d discovery.DiscoveryInterface) discovery.DiscoveryInterface {
	if o, ok := d.(*once); ok {
		return again{o}
	}
	return d
}

type again struct{ *once }

func (a again) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	lists, err := a.once.DiscoveryInterface.ServerPreferredResources()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lists, a.err, a.asked = lists, err, true
	return lists, err
}
