package backup

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// namespaces lists the namespaces the backup includes.
func (r *run) namespaces(ctx context.Context) ([]string, error) {
	list, err := r.e.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	var out []string
	spec := r.backup.Spec
	present := map[string]bool{}
	for _, ns := range list.Items {
		present[ns.GetName()] = true
		if resources.Includes(spec.IncludedNamespaces, spec.ExcludedNamespaces, resources.NameMatcher(ns.GetName())) {
			out = append(out, ns.GetName())
		}
	}
	for _, w := range UnmatchedNamespaces(spec, present) {
		r.rec.RunWarning(w)
	}
	return out, nil
}

// UnmatchedNamespaces names the namespaces the backup's filters give that
// the cluster does not have (present): a warning on the backup, or with
// spec.strict a validation error.
func UnmatchedNamespaces(spec salvorv1.BackupSpec, present map[string]bool) []string {
	out := resources.UnmatchedNamespaces("includedNamespaces", spec.IncludedNamespaces, present, "in the cluster")
	return append(out, resources.UnmatchedNamespaces("excludedNamespaces", spec.ExcludedNamespaces, present, "in the cluster")...)
}

type work struct {
	res  resources.Resource
	item *item
}

// walk lists every selected item and processes it on the workers.
func (r *run) walk(ctx context.Context, all []resources.Resource, namespaces []string, selectors []labels.Selector) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	workers := r.e.Workers
	if workers <= 0 {
		workers = 8 * runtime.NumCPU()
	}
	queue := make(chan work, workers*4)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range queue {
				if r.waitsForPod(ctx, w) {
					continue
				}
				if err := r.backupItem(ctx, w.res, w.item, true); err != nil {
					cancel(err)
				}
			}
		}()
	}
	listErr := r.list(ctx, all, namespaces, selectors, queue)
	if listErr == nil && ctx.Err() == nil {
		// The ordered items, here, while the workers drain the queue.
		if err := r.backupOrdered(ctx); err != nil {
			cancel(err)
		}
	}
	close(queue)
	wg.Wait()
	if listErr == nil && ctx.Err() == nil {
		if err := r.backupLast(ctx, workers); err != nil {
			cancel(err)
		}
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("backup %s stopped: %w", r.backup.Name, context.Cause(ctx))
	}
	return listErr
}

// listers is how many LISTs a backup has in flight at once. Most scopes
// (a resource type in a namespace) are empty, and one after the other
// their round trips to the API server add up to most of a small backup's
// time; a few at once hide them without holding many pages in memory.
const listers = 4

// list lists every selected scope, a few at a time, onto the queue: once
// per label selector (the API server filters by one), each list leaving
// out the items an earlier selector took.
func (r *run) list(ctx context.Context, all []resources.Resource, namespaces []string, selectors []labels.Selector, queue chan<- work) error {
	spec := r.backup.Spec
	nsSet := map[string]bool{}
	for _, ns := range namespaces {
		nsSet[ns] = true
	}
	filters := r.policies.Filters()
	// A namespace a filter policy decides is listed on its own: its
	// selectors are the policy's, not the backup's.
	decided := slices.ContainsFunc(namespaces, filters.Decides)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(listers)
	for _, res := range all {
		isNamespaceResource := res.GVR.Group == "" && res.GVR.Resource == "namespaces"
		if !isNamespaceResource && !r.scope.lists(res) {
			continue
		}
		if isNamespaceResource {
			keep := func(it *item) bool { return nsSet[it.name()] }
			g.Go(func() error { return r.listScope(ctx, res, "", "", keep, queue) })
			continue
		}
		scopes := []string{""}
		if res.Namespaced {
			scopes = namespaces
			if r.scope.allNamespaces() && len(spec.ExcludedNamespaces) == 0 && !decided {
				scopes = []string{metav1.NamespaceAll}
			}
		}
		for _, ns := range scopes {
			sels, name := selectors, func(string) bool { return true }
			// Filters decide a namespaced resource in a namespace, and a
			// cluster-scoped one at cluster scope; every namespace in one
			// LIST is only for when no policy decides one of them.
			if f, ok := filters.For(ns, res.MatchesAny); ok && res.Namespaced == (ns != metav1.NamespaceAll) {
				if f == nil {
					r.log.Debug("not listed: the namespace's filter policy does not name the resource", "resource", res.String(), "namespace", ns)
					continue
				}
				sels, name = f.Selectors(), f.TakesName
			}
			for i, selector := range sels {
				earlier := sels[:i]
				keep := func(it *item) bool {
					return name(it.name()) && (len(earlier) == 0 || !resources.AnyMatches(earlier, labels.Set(it.labels())))
				}
				if ctx.Err() != nil {
					break
				}
				g.Go(func() error { return r.listScope(ctx, res, ns, selector.String(), keep, queue) })
			}
		}
	}
	return g.Wait()
}

// listScope lists one resource type in one namespace (or the whole
// cluster) page by page onto the queue. A failed LIST is an error of the
// backup's results, not the end of the backup.
func (r *run) listScope(ctx context.Context, res resources.Resource, ns, labelSelector string, keep func(*item) bool, queue chan<- work) error {
	pageSize := r.e.PageSize
	switch {
	case pageSize == 0:
		pageSize = 500
	case pageSize < 0:
		pageSize = 0
	}
	opts := metav1.ListOptions{Limit: pageSize, LabelSelector: labelSelector}
	for {
		page, err := listPage(ctx, r.e.REST, res.GVR, ns, opts)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			msg := fmt.Sprintf("listing %s: %v", res, err)
			if apierrors.IsForbidden(err) {
				// The install's role names the resources discovery listed
				// when it ran: a CRD installed since is not in it.
				msg += " (the server's role covers the resources the cluster served when Salvor was installed: for one installed since, run `salvor install` again, or `helm upgrade --reuse-values`)"
			}
			r.rec.Error(ns, msg)
			return nil
		}
		kind := strings.TrimSuffix(page.Kind, "List")
		for _, raw := range page.Items {
			it, err := listedItem(raw, page.APIVersion, kind)
			if err != nil {
				r.rec.Error(ns, fmt.Sprintf("listing %s: an item the API server sent is not an object: %v", res, err))
				continue
			}
			if !keep(it) {
				continue
			}
			r.total.Add(1)
			if r.order.hold(work{res: res, item: it}) {
				continue
			}
			select {
			case queue <- work{res: res, item: it}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if page.Metadata.Continue == "" {
			return nil
		}
		opts.Continue = page.Metadata.Continue
	}
}
