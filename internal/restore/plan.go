package restore

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/csi"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// needs records the cluster-scoped items a restored namespaced item needs
// to work: a claim's volume, a custom resource's definition.
func (r *run) needs(gr schema.GroupResource, ns string, obj *unstructured.Unstructured) {
	if gr == (schema.GroupResource{Resource: "persistentvolumeclaims"}) && !r.fromCSISnapshot(obj) {
		if pv, _, _ := unstructured.NestedString(obj.Object, "spec", "volumeName"); pv != "" {
			r.needed["persistentvolumes/"+pv] = ns + "/" + obj.GetName()
		}
	}
	if gr.Group != "" {
		r.needed[crdResource.String()+"/"+gr.String()] = ""
	}
}

// fromCSISnapshot tells whether claim is restored from the CSI snapshot
// its backup took or from the data Velero's data mover moved (the
// built-in CSI action makes it so), rather than bound to its backed-up
// volume.
func (r *run) fromCSISnapshot(claim *unstructured.Unstructured) bool {
	_, moved := r.veleroMoved[claim.GetNamespace()+"/"+claim.GetName()]
	return (moved || csi.SnapshotOfClaim(claim) != "") &&
		(r.restore.Spec.RestorePVs == nil || *r.restore.Spec.RestorePVs)
}

// scopeSeen is where a resource's items are filed in a backup: an entry
// under a namespace and one under the cluster-scoped path, if any.
type scopeSeen struct {
	namespaced, cluster string
}

var crdResource = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}

// checkScope refuses an entry filed under the other scope than its
// resource has. The backup is untrusted: such an item would slip past the
// namespace filters and mapping, so nothing from the backup is restored.
func checkScope(gr schema.GroupResource, namespaced bool, path string, filedNamespaced bool) error {
	if namespaced == filedNamespaced {
		return nil
	}
	if namespaced {
		return fmt.Errorf("%w: entry %s is filed as cluster-scoped, but resource %s is namespaced; nothing from this backup is restored", archive.ErrInvalid, path, gr)
	}
	return fmt.Errorf("%w: entry %s is filed under a namespace, but resource %s is cluster-scoped; nothing from this backup is restored", archive.ErrInvalid, path, gr)
}

// read checks the whole tarball and spools its items, tier by tier.
func (r *run) read(tarball io.Reader) error {
	// Scopes of resources the cluster does not serve yet are checked
	// against the backup's own CRDs once the whole tarball is read.
	unserved := map[schema.GroupResource]scopeSeen{}
	crdScopes := map[schema.GroupResource]bool{}
	_, err := archive.Read(tarball, func(e archive.Entry) error {
		if e.Version != "" {
			return nil // the top-level copy is the one restored
		}
		gr := schema.GroupResource{Group: e.Group, Resource: e.Resource}
		if res, served := r.selection().servedAs(gr); served {
			if err := checkScope(gr, res.Namespaced, e.Path, e.Namespace != ""); err != nil {
				return err
			}
		} else {
			seen := unserved[gr]
			if e.Namespace != "" {
				seen.namespaced = e.Path
			} else {
				seen.cluster = e.Path
			}
			unserved[gr] = seen
		}
		if why := e.Misfiled(); why != "" {
			r.rec.Error(r.selection().targetNamespace(e.Namespace), fmt.Sprintf("%s: %s: not restored, as the restore's filters, policies and mappings judged it by its path", describe(gr, e.Namespace, e.Name), why))
			r.record(describe(gr, r.selection().targetNamespace(e.Namespace), e.Name), salvorv1.DryRunWouldFail, why)
			return nil
		}
		if gr == crdResource {
			group, _, _ := unstructured.NestedString(e.Object.Object, "spec", "group")
			plural, _, _ := unstructured.NestedString(e.Object.Object, "spec", "names", "plural")
			scope, _, _ := unstructured.NestedString(e.Object.Object, "spec", "scope")
			crdScopes[schema.GroupResource{Group: group, Resource: plural}] = scope == "Namespaced"
		}
		if e.Namespace != "" {
			r.held[e.Namespace] = true
		} else if gr == (schema.GroupResource{Resource: "namespaces"}) {
			r.held[e.Name] = true
		}
		v := r.selection().judge(gr, e.Namespace, e.Name, e.Object)
		if v.candidate {
			r.candidates[gr.String()+"/"+e.Name] = claimOfVolume(gr, e.Object)
		}
		if v.warning != "" {
			r.rec.Warning(e.Namespace, v.warning)
			r.record(describe(gr, r.selection().targetNamespace(e.Namespace), e.Name), salvorv1.DryRunSkipped, v.skipped)
		}
		selected := v.take
		if selected && gr == (schema.GroupResource{Resource: "persistentvolumeclaims"}) && r.fromCSISnapshot(e.Object) {
			if pv, _, _ := unstructured.NestedString(e.Object.Object, "spec", "volumeName"); pv != "" {
				r.fromSnapshot[pv] = e.Namespace + "/" + e.Name
			}
		}
		if selected && e.Namespace != "" {
			r.namespaces[e.Namespace] = true
			if r.selection().needsAtRead() {
				r.needs(gr, e.Namespace, e.Object)
			}
		}
		if gr == (schema.GroupResource{Resource: "namespaces"}) {
			r.nsItems[e.Name] = selected
		}
		if selected {
			r.total.Add(1)
		}
		return r.spool.add(r.tiers.of(gr), gr, e.Object.GetAPIVersion(), e.Namespace, e.Name, selected, e.Raw)
	})
	if err == nil {
		// To its end: a tarball checked against its signed manifest fails
		// there if it is not the one signed, before anything is made.
		_, err = io.Copy(io.Discard, tarball)
	}
	if err == nil {
		for gr, seen := range unserved {
			namespaced, ok := crdScopes[gr]
			switch {
			case !ok:
			case namespaced && seen.cluster != "":
				err = checkScope(gr, true, seen.cluster, false)
			case !namespaced && seen.namespaced != "":
				err = checkScope(gr, false, seen.namespaced, true)
			}
			if err != nil {
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("backup %s: %w", r.restore.Spec.BackupName, err)
	}
	// A cluster-scoped item left out by includeClusterResources comes
	// back when a restored item needs it; one needed but not a candidate
	// (not in the backup, or refused by the resource filters), or a
	// volume that names another claim than the one needing it, does not.
	for key, by := range r.needed {
		whose, ok := r.candidates[key]
		if ok && whose != by {
			r.rec.Warning(r.selection().targetNamespace(namespaceOf(by)), volumeNotTheirs(by, strings.TrimPrefix(key, "persistentvolumes/"), whose))
		}
		if !ok || whose != by {
			delete(r.needed, key)
		}
	}
	r.total.Add(int64(len(r.needed)))
	replaced, err := r.spool.seal()
	if err != nil {
		return fmt.Errorf("spooling backup %s: %w", r.restore.Spec.BackupName, err)
	}
	r.total.Add(int64(-replaced))
	return nil
}

// discover reads the cluster's resources through d: the run's discovery
// (asked once per run), or resources.Again of it when the run waits for
// what it made itself.
func (r *run) discover(d discovery.DiscoveryInterface) error {
	all, unavailable, err := resources.Discover(d)
	if err != nil {
		return err
	}
	for _, u := range unavailable {
		if !r.reported[u.GroupVersion] {
			r.reported[u.GroupVersion] = true
			r.rec.RunWarning(u.String() + " (items of its resources in the backup are not restored)")
		}
	}
	r.sel.Store(r.selection().withServed(all))
	return nil
}

func (r *run) loadActions(ctx context.Context) error {
	if r.e.Plugins == nil {
		return nil
	}
	all, err := host.All(ctx, r.e.Plugins, host.RestoreItemActions)
	if err != nil {
		return err
	}
	r.actions, err = resources.Scope(ctx, "RestoreItemAction", all)
	return err
}

// ensureNamespaces creates the target namespaces that the backup does not
// hold a Namespace object for (or whose object is not selected).
func (r *run) ensureNamespaces(ctx context.Context) error {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	for ns := range r.namespaces {
		if r.nsItems[ns] {
			continue // restored from the backup, mapped, in its tier
		}
		target := r.selection().targetNamespace(ns)
		obj, err := r.backedUpNamespace(ns)
		if err != nil {
			r.rec.Warning(target, fmt.Sprintf("namespace %s: reading its labels and annotations from the backup: %v; made without them", target, err))
		}
		obj.SetName(target)
		Clean(obj, r.restore.Spec.BackupName, r.restore.Name, false)
		_, err = r.e.Dynamic.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{DryRun: r.dryRunOptions()})
		switch {
		case err == nil && r.dry != nil:
			r.dry.namespaces.Store(target, true)
			r.record(describe(gvr.GroupResource(), "", target), salvorv1.DryRunWouldCreate, "made by the restore: the backup holds items of namespace "+ns)
		case err != nil && !apierrors.IsAlreadyExists(err):
			r.rec.Error(target, fmt.Sprintf("creating namespace %s: %v", target, err))
			r.record(describe(gvr.GroupResource(), "", target), salvorv1.DryRunWouldFail, err.Error())
		default:
			r.fence(ctx, target)
		}
	}
	return nil
}

// backedUpNamespace is the namespace a restore makes for the items it
// restores into ns when it does not restore ns's own item (a label
// selector or the resource filters leave it out): with the labels and
// annotations the backup holds for it, as Velero makes it — its Pod
// Security level, the labels network policies select it by, its owner —
// or bare when the backup holds none.
func (r *run) backedUpNamespace(ns string) (*unstructured.Unstructured, error) {
	bare := &unstructured.Unstructured{}
	bare.SetAPIVersion("v1")
	bare.SetKind("Namespace")
	if _, held := r.nsItems[ns]; !held {
		return bare, nil
	}
	l, ok, err := r.spool.find(key(schema.GroupResource{Resource: "namespaces"}, "", ns))
	if err != nil || !ok {
		return bare, err
	}
	it, err := r.spool.load(l)
	if err != nil {
		return bare, err
	}
	fields, err := archive.DecodeObject(it.body)
	if err != nil {
		return bare, err
	}
	bare.SetLabels((&unstructured.Unstructured{Object: fields}).GetLabels())
	bare.SetAnnotations((&unstructured.Unstructured{Object: fields}).GetAnnotations())
	return bare, nil
}

// waitEstablished waits for the custom resource definitions a tier made to
// be established, and then for discovery to list their resources (the API
// server adds them a moment after): a custom resource restored before
// either would fail as not served. Each wait is bounded by a minute.
func (r *run) waitEstablished(ctx context.Context, crds []string) error {
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var made []schema.GroupResource
	for _, name := range crds {
		var gr schema.GroupResource
		err := wait.PollUntilContextCancel(wctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			obj, err := r.e.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
			if err == nil && established(obj) {
				gr.Group, _, _ = unstructured.NestedString(obj.Object, "spec", "group")
				gr.Resource, _, _ = unstructured.NestedString(obj.Object, "spec", "names", "plural")
			}
			// One not made (its error is in the results already, or a
			// plugin skipped it) is not waited for.
			return apierrors.IsNotFound(err) || gr.Resource != "", nil
		})
		if err != nil && ctx.Err() == nil {
			r.rec.Warning("", fmt.Sprintf("custom resource definition %s is not established after a minute; its resources may fail to restore", name))
		}
		if gr.Resource != "" {
			made = append(made, gr)
		}
	}
	var missing []string
	served := func(context.Context) (bool, error) {
		// Asked anew: the run's own answer predates the definitions.
		if err := r.discover(resources.Again(r.e.Discovery)); err != nil {
			return false, err
		}
		missing = missing[:0]
		sel := r.selection()
		for _, gr := range made {
			if _, ok := sel.servedAs(gr); !ok {
				missing = append(missing, gr.String())
			}
		}
		return len(missing) == 0, nil
	}
	// Discovery runs at least once, however long the waits above took.
	if done, err := served(ctx); err != nil || done {
		return err
	}
	err := wait.PollUntilContextCancel(wctx, 100*time.Millisecond, false, served)
	switch {
	case err == nil || ctx.Err() != nil:
	case wctx.Err() == nil:
		return err // discovery failed
	default:
		r.rec.Warning("", fmt.Sprintf("resources %s, of custom resource definitions established, are not in the API server's discovery after a minute; their items may fail to restore", strings.Join(missing, ", ")))
	}
	return nil
}

func established(obj *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// backupNamespaceOf is the backup namespace mapped to ns, or ns.
func (r *run) backupNamespaceOf(ns string) string {
	for from, to := range r.restore.Spec.NamespaceMapping {
		if to == ns {
			return from
		}
	}
	return ns
}
