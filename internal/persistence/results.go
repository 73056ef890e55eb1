package persistence

import (
	"log/slog"
	"sort"
	"sync"
)

// Result lists messages: Salvor's own, cluster-scoped items', and each
// namespace's. The JSON shape is Velero's.
type Result struct {
	Velero     []string            `json:"velero"`
	Cluster    []string            `json:"cluster"`
	Namespaces map[string][]string `json:"namespaces"`
}

// Add records a message about an item in namespace ("" for cluster-scoped),
// or about the backup itself when global.
func (r *Result) Add(global bool, namespace, msg string) {
	switch {
	case global:
		r.Velero = append(r.Velero, msg)
	case namespace == "":
		r.Cluster = append(r.Cluster, msg)
	default:
		if r.Namespaces == nil {
			r.Namespaces = map[string][]string{}
		}
		r.Namespaces[namespace] = append(r.Namespaces[namespace], msg)
	}
}

// Count is the number of messages.
func (r *Result) Count() int {
	n := len(r.Velero) + len(r.Cluster)
	for _, m := range r.Namespaces {
		n += len(m)
	}
	return n
}

// All returns every message, Salvor's first, then cluster, then namespaces in order.
func (r *Result) All() []string {
	out := append(append([]string{}, r.Velero...), r.Cluster...)
	var nss []string
	for ns := range r.Namespaces {
		nss = append(nss, ns)
	}
	sort.Strings(nss)
	for _, ns := range nss {
		out = append(out, r.Namespaces[ns]...)
	}
	return out
}

// Results are a backup's or restore's warnings and errors.
type Results struct {
	Warnings Result `json:"warnings"`
	Errors   Result `json:"errors"`
	// DryRun lists, for a dry-run restore, what restoring each item would
	// do (Salvor's; Velero's readers ignore it).
	DryRun []DryRunItem `json:"dryRun,omitempty"`
}

// DryRunItem is what a dry-run restore found restoring one item would do.
type DryRunItem struct {
	// Item is "<resource> <namespace>/<name>" as restored (mapped).
	Item    string `json:"item"`
	Outcome string `json:"outcome"`
	// Detail: the fields that differ, why it is skipped, the API server's
	// refusal.
	Detail string `json:"detail,omitempty"`
}

// Normalize makes empty lists and maps non-nil, as Velero writes them.
func (r *Results) Normalize() {
	for _, x := range []*Result{&r.Warnings, &r.Errors} {
		if x.Velero == nil {
			x.Velero = []string{}
		}
		if x.Cluster == nil {
			x.Cluster = []string{}
		}
		if x.Namespaces == nil {
			x.Namespaces = map[string][]string{}
		}
	}
}

// Recorder collects a run's warnings and errors from concurrent workers,
// logging each as it comes. The zero value needs only Log.
type Recorder struct {
	Log *slog.Logger

	mu      sync.Mutex
	results Results
}

// Error records an error about an item in namespace ("" for cluster-scoped).
func (r *Recorder) Error(namespace, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results.Errors.Add(false, namespace, msg)
	r.Log.Error(msg, "namespace", namespace)
}

// RunError records an error about the run as a whole, not one item.
func (r *Recorder) RunError(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results.Errors.Add(true, "", msg)
	r.Log.Error(msg)
}

// RunWarning records a warning about the run as a whole, not one item.
func (r *Recorder) RunWarning(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results.Warnings.Add(true, "", msg)
	r.Log.Warn(msg)
}

// Warning records a warning about an item in namespace.
func (r *Recorder) Warning(namespace, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results.Warnings.Add(false, namespace, msg)
	r.Log.Warn(msg, "namespace", namespace)
}

// Results is what has been recorded so far.
func (r *Recorder) Results() Results {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.results
}
