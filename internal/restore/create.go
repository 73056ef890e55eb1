package restore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// NewCreateClient returns the client Engine.REST expects: JSON bodies out,
// and error responses decoded into API status errors so that
// apierrors.IsAlreadyExists and friends work on what it returns.
func NewCreateClient(cfg *rest.Config) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c.APIPath = ""
	c.GroupVersion = nil
	return rest.UnversionedRESTClientFor(c)
}

// postObject creates obj and discards the object the server sends back:
// the restore needs only to know whether the create worked (an error's
// Status is decoded from protobuf or JSON alike).
func postObject(ctx context.Context, c rest.Interface, gvr schema.GroupVersionResource, namespaced bool, obj *unstructured.Unstructured, dryRun bool) error {
	body, err := json.Marshal(obj.Object)
	if err != nil {
		return fmt.Errorf("encoding %s %s: %w", gvr.Resource, obj.GetName(), err)
	}
	path := "/api/" + gvr.Version
	if gvr.Group != "" {
		path = "/apis/" + gvr.Group + "/" + gvr.Version
	}
	if namespaced {
		path += "/namespaces/" + obj.GetNamespace()
	}
	path += "/" + gvr.Resource
	// The answer is thrown away, so it may as well be protobuf: the API
	// server encodes a built-in object that way for a fraction of the CPU
	// JSON costs it (custom resources still come back as JSON).
	req := c.Post().AbsPath(path).Body(body).SetHeader("Accept", "application/vnd.kubernetes.protobuf, application/json")
	if dryRun {
		req = req.Param("dryRun", metav1.DryRunAll)
	}
	return req.Do(ctx).Error()
}

// gvrFor picks the version to create an item at: the backed-up version if
// the cluster serves it, else the cluster's preferred one.
func (r *run) gvrFor(it *entry, obj *unstructured.Unstructured) (schema.GroupVersionResource, bool, bool) {
	res, ok := r.selection().servedAs(it.kind.gr)
	if !ok {
		return schema.GroupVersionResource{}, false, false
	}
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil || gv.Group != it.kind.gr.Group {
		return res.GVR, res.Namespaced, true
	}
	return gv.WithResource(it.kind.gr.Resource), res.Namespaced, true
}

// create makes obj, an item of the backup, or handles it as the
// existing-resource policy says; an item it makes gets status, what it
// held in the backup, back if the restore asks (statusToRestore).
func (r *run) create(ctx context.Context, it *entry, obj *unstructured.Unstructured, status any, what, ns string) {
	gvr, namespaced, ok := r.gvrFor(it, obj)
	item := r.dryName(it, obj)
	if !ok {
		msg := fmt.Sprintf("the cluster does not serve resource %s", it.kind.gr)
		r.rec.Error(ns, what+": "+msg)
		r.record(item, salvorv1.DryRunWouldFail, msg)
		return
	}
	// The backup is untrusted: an item filed under the other scope than
	// its resource has would slip past the namespace filters and mapping
	// (a namespaced item under a cluster path lands in whatever namespace
	// its JSON names; a cluster-scoped one under a namespace path is
	// selected by that namespace).
	if namespaced != (it.namespace != "") {
		scope, filed := "cluster-scoped", "a namespace"
		if namespaced {
			scope, filed = "namespaced", "the cluster-scoped items"
		}
		msg := fmt.Sprintf("resource %s is %s but the backup files this item under %s; not restored", it.kind.gr, scope, filed)
		r.rec.Error(ns, what+": "+msg)
		r.record(item, salvorv1.DryRunWouldFail, msg)
		return
	}
	err := postObject(ctx, r.e.REST, gvr, namespaced, obj, r.dry != nil)
	if nodePortRefused(err) && gvr.GroupResource() == (schema.GroupResource{Resource: "services"}) {
		// A node port kept because someone set it is in use here (a
		// namespace copied beside its original, say) or out of this
		// cluster's range: the cluster assigns one instead, and the
		// restore says so.
		r.rec.Warning(ns, fmt.Sprintf("%s: its node ports are refused in this cluster (%v); restored with node ports the cluster assigned", what, err))
		DropNodePorts(obj)
		err = postObject(ctx, r.e.REST, gvr, namespaced, obj, r.dry != nil)
	}
	var live *unstructured.Unstructured // read when it exists
	if apierrors.IsAlreadyExists(err) && r.dry == nil && waitsForDeletion(gvr.GroupResource()) {
		// One being deleted (a claim still in use, an item held by a
		// finalizer) would go from under the restore: it is waited for
		// and made anew.
		var gone error
		switch live, gone = r.awaitDeleted(ctx, resourceClient(r.e.Dynamic, gvr, namespaced, obj), obj, what, ns); {
		case gone == nil:
			err = postObject(ctx, r.e.REST, gvr, namespaced, obj, false)
		case !errors.Is(gone, errNotDeleting):
			r.record(item, salvorv1.DryRunWouldFail, gone.Error())
			return
		}
	}
	switch {
	case err == nil:
		r.restored.Add(1)
		r.withoutData(it, what, ns)
		detail := ""
		if st := r.statusToRestore(it.kind.gr, obj, status, what, ns); st != nil && r.dry == nil {
			r.putStatus(ctx, resourceClient(r.e.Dynamic, gvr, namespaced, obj), obj, st, what, ns)
		} else if st != nil {
			detail = statusWouldBeRestored
		}
		if r.dry != nil && gvr.GroupResource() == (schema.GroupResource{Resource: "namespaces"}) {
			r.dry.namespaces.Store(obj.GetName(), true)
		}
		if gvr.GroupResource() == podResource {
			detail = joinDetail(detail, r.startExecHooks(ctx, obj, what))
		}
		r.record(item, salvorv1.DryRunWouldCreate, detail)
	case r.dry != nil && namespaced && apierrors.IsNotFound(err) && r.dry.made(obj.GetNamespace()):
		r.restored.Add(1)
		r.withoutData(it, what, ns)
		detail := fmt.Sprintf("namespace %s would be made by this restore, so the API server could not check the item", obj.GetNamespace())
		if r.statusToRestore(it.kind.gr, obj, status, what, ns) != nil {
			detail += "; " + statusWouldBeRestored
		}
		if gvr.GroupResource() == podResource {
			detail = joinDetail(detail, r.startExecHooks(ctx, obj, what))
		}
		r.record(item, salvorv1.DryRunWouldCreate, detail)
	case apierrors.IsAlreadyExists(err):
		r.existing(ctx, resourceClient(r.e.Dynamic, gvr, namespaced, obj), gvr.GroupResource(), live, obj, what, item, ns)
	default:
		if ctx.Err() == nil {
			r.rec.Error(ns, fmt.Sprintf("%s: %v", what, err))
			r.record(item, salvorv1.DryRunWouldFail, err.Error())
		}
	}
}

// joinDetail joins the parts of a dry-run outcome's detail.
func joinDetail(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// resourceClient is the dynamic client of obj's resource and namespace.
func resourceClient(d dynamic.Interface, gvr schema.GroupVersionResource, namespaced bool, obj *unstructured.Unstructured) dynamic.ResourceInterface {
	if namespaced {
		return d.Resource(gvr).Namespace(obj.GetNamespace())
	}
	return d.Resource(gvr)
}

// nodePortRefused tells whether a create failed because a node port it asks
// for is refused (in use here, or outside this cluster's range): the API
// server names the port's field, spec.ports[i].nodePort, in the Invalid
// status's causes.
func nodePortRefused(err error) bool {
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsInvalid(err) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Type == metav1.CauseTypeFieldValueInvalid && strings.HasSuffix(c.Field, ".nodePort") {
			return true
		}
	}
	return false
}

// withoutData reports an item just made whose volume data the backup keeps
// where Salvor cannot restore it from (Volumes.Elsewhere): an error, or a
// warning when the restore asked for no volume data (restorePVs false).
func (r *run) withoutData(it *entry, what, ns string) {
	if len(r.elsewhere) == 0 || it.kind.gr.Group != "" {
		return // the usual case: no key built for each item made
	}
	where, ok := r.elsewhere[it.kind.gr.Resource+"/"+it.namespace+"/"+it.name]
	if !ok {
		return
	}
	done := "restored"
	if r.dry != nil {
		done = "would be restored"
	}
	msg := fmt.Sprintf("%s: %s without its volume data, which the backup keeps %s; Salvor cannot restore that data (Velero's node agent can)", what, done, where)
	if r.restore.Spec.RestorePVs != nil && !*r.restore.Spec.RestorePVs {
		r.rec.Warning(ns, msg+"; restorePVs is false, so none was asked for")
		return
	}
	r.rec.Error(ns, msg)
}

// Changes names the fields in which restoring obj would change live. The
// API server says what it would make of obj over live — a server-side
// apply of it, as a dry run: defaults filled in, fields the backup does
// not set left as live has them — so an object nobody changed has none,
// and a changed one names only what was changed. Where the dry run is
// refused, the backed-up object is compared with live as it is.
func Changes(ctx context.Context, ri dynamic.ResourceInterface, live, obj *unstructured.Unstructured) []string {
	probe := obj.DeepCopy()
	labels := probe.GetLabels()
	delete(labels, salvorv1.BackupNameLabel)
	delete(labels, salvorv1.RestoreNameLabel)
	probe.SetLabels(labels)
	if len(labels) == 0 {
		unstructured.RemoveNestedField(probe.Object, "metadata", "labels")
	}
	applied, err := ri.Apply(ctx, probe.GetName(), probe, metav1.ApplyOptions{FieldManager: "salvor-restore-check", Force: true, DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return differences(live, obj)
	}
	return differences(live, applied)
}

// existing applies the existing-resource policy to obj, an item of gr,
// which exists as live (read here when nil).
func (r *run) existing(ctx context.Context, ri dynamic.ResourceInterface, gr schema.GroupResource, live, obj *unstructured.Unstructured, what, item, ns string) {
	var err error
	if live == nil {
		live, err = ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	}
	if err != nil {
		r.rec.Error(ns, fmt.Sprintf("%s exists but could not be read: %v", what, err))
		r.record(item, salvorv1.DryRunWouldFail, fmt.Sprintf("exists but could not be read: %v", err))
		return
	}
	if live.GetDeletionTimestamp() != nil && r.dry != nil && waitsForDeletion(gr) { // a restore would wait (awaitDeleted)
		r.restored.Add(1)
		r.record(item, salvorv1.DryRunWouldCreate, fmt.Sprintf("exists but is being deleted: the restore would wait up to %s for it to go and make it anew", r.terminatingTimeout()))
		return
	}
	diff := Changes(ctx, ri, live, obj)
	if len(diff) == 0 {
		r.restored.Add(1)
		r.record(item, salvorv1.DryRunIdentical, "")
		return
	}
	if r.policy != salvorv1.ExistingResourcePolicyUpdate {
		// Handled as asked: counted, and said in the warnings.
		r.rec.Warning(ns, fmt.Sprintf("%s already exists and differs from the backup in %s; left as it is (existingResourcePolicy none)", what, strings.Join(diff, ", ")))
		r.restored.Add(1)
		r.record(item, salvorv1.DryRunDiffers, "differs in "+strings.Join(diff, ", ")+"; would be left as it is (existingResourcePolicy none)")
		return
	}
	patch := obj.DeepCopy()
	unstructured.RemoveNestedField(patch.Object, "metadata", "namespace")
	if gr == pvResource.GroupResource() {
		// A live volume is never handed to another claim: a claimRef from
		// the bucket would give its data to whoever can make that claim.
		unstructured.RemoveNestedField(patch.Object, "spec", "claimRef")
		if claimOfVolume(gr, live) != claimOfVolume(gr, obj) {
			r.rec.Warning(ns, fmt.Sprintf("%s: its claimRef is left as the cluster has it: a restore never rebinds a live volume", what))
		}
	}
	body, err := json.Marshal(patch.Object)
	if err != nil {
		r.rec.Error(ns, fmt.Sprintf("%s: %v", what, err))
		return
	}
	if _, err := ri.Patch(ctx, obj.GetName(), types.MergePatchType, body, metav1.PatchOptions{DryRun: r.dryRunOptions()}); err != nil {
		r.rec.Error(ns, fmt.Sprintf("%s already exists and could not be updated: %v", what, err))
		r.record(item, salvorv1.DryRunWouldFail, fmt.Sprintf("differs in %s; updating it would fail: %v", strings.Join(diff, ", "), err))
		return
	}
	r.restored.Add(1)
	r.record(item, salvorv1.DryRunDiffers, "differs in "+strings.Join(diff, ", ")+"; would be updated (existingResourcePolicy update)")
}
