package backup

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/podvolume"
	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

var (
	saResource  = schema.GroupResource{Resource: "serviceaccounts"}
	crbResource = schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}
	crResource  = schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}
	podResource = schema.GroupResource{Resource: "pods"}
	pcResource  = schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}
)

// binding is a ClusterRoleBinding of a service account, with the
// ClusterRole it grants (empty when it grants another kind).
type binding struct{ name, role string }

// Items a backed-up item needs come with it, as Velero's built-in backup
// actions bring them, whatever the backup's label selector: a pod's claims
// (and through them their volumes and snapshots) and priority class, a
// service account's cluster role bindings and the roles these grant. The
// resource filters still apply, and includeClusterResources false keeps
// the cluster-scoped ones out. A backup selecting an app by label thus
// holds the volume data its pods use even when their claims are not
// labelled.

// clusterRelated tells whether cluster-scoped items a namespaced one needs
// may come with it.
func (r *run) clusterRelated() bool { return r.scope.clusterRelated() }

// podRelated backs up a pod's claims and its priority class, and warns
// of the volumes it asks Velero to copy the files of that are not in the
// backup.
func (r *run) podRelated(ctx context.Context, pod *unstructured.Unstructured, what string) error {
	for _, msg := range fsBackupWarnings(pod, r.backup.Spec.DefaultVolumesToFsBackup != nil && *r.backup.Spec.DefaultVolumesToFsBackup) {
		r.rec.Warning(pod.GetNamespace(), what+": "+msg)
	}
	for _, claim := range resources.PodClaims(pod) {
		if !r.takes(pvcResource) {
			break // the same for every claim
		}
		if err := r.backupRelated(ctx, api.ResourceIdentifier{GroupResource: pvcResource, Namespace: pod.GetNamespace(), Name: claim}, what); err != nil {
			return err
		}
	}
	if pc, _, _ := unstructured.NestedString(pod.Object, "spec", "priorityClassName"); pc != "" && r.clusterRelated() && r.takes(pcResource) {
		return r.backupRelated(ctx, api.ResourceIdentifier{GroupResource: pcResource, Name: pc}, what)
	}
	return nil
}

// rbacOf backs up the ClusterRoleBindings that bind a backed-up service
// account, and the ClusterRoles they grant, so that a namespace restored
// into another cluster keeps the cluster-wide rights its workloads had.
func (r *run) rbacOf(ctx context.Context, sa *unstructured.Unstructured, what string) error {
	if !r.clusterRelated() {
		return nil
	}
	bindings, err := r.saBindings(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.rec.Warning(sa.GetNamespace(), fmt.Sprintf("%s: the cluster role bindings of service accounts could not be listed, so those binding it are not in the backup: %v", what, err))
		return nil
	}
	for _, b := range bindings[sa.GetNamespace()+"/"+sa.GetName()] {
		if r.takes(crbResource) {
			if err := r.backupRelated(ctx, api.ResourceIdentifier{GroupResource: crbResource, Name: b.name}, what); err != nil {
				return err
			}
		}
		if b.role != "" && r.takes(crResource) {
			if err := r.backupRelated(ctx, api.ResourceIdentifier{GroupResource: crResource, Name: b.role}, what); err != nil {
				return err
			}
		}
	}
	return nil
}

// backupRelated backs up an item a backed-up one needs, unless a filter
// policy's names leave it out.
func (r *run) backupRelated(ctx context.Context, id api.ResourceIdentifier, what string) error {
	if res, ok := r.resources[id.GroupResource]; ok && r.policyLeavesOut(res, id) {
		r.log.Info("not backed up: a filter policy's names leave it out", "item", id.String(), "needed by", what)
		return nil
	}
	return r.backupAdditional(ctx, id, what)
}

// takes tells whether the backup's resource filters let a resource in.
func (r *run) takes(gr schema.GroupResource) bool {
	res, ok := r.resources[gr]
	return ok && r.scope.takes(res)
}

// saBindings lists the cluster's ClusterRoleBindings once per backup, by
// the service accounts ("namespace/name") they bind.
func (r *run) saBindings(ctx context.Context) (map[string][]binding, error) {
	r.rbacOnce.Do(func() {
		res, ok := r.resources[crbResource]
		if !ok {
			r.rbac = map[string][]binding{}
			return
		}
		list, err := r.e.Dynamic.Resource(res.GVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			r.rbacErr = err
			return
		}
		r.rbac = bindingsBySubject(list.Items)
	})
	return r.rbac, r.rbacErr
}

// bindingsBySubject indexes ClusterRoleBindings by the service accounts
// they bind.
func bindingsBySubject(items []unstructured.Unstructured) map[string][]binding {
	out := map[string][]binding{}
	for _, crb := range items {
		b := binding{name: crb.GetName()}
		if kind, _, _ := unstructured.NestedString(crb.Object, "roleRef", "kind"); kind == "ClusterRole" {
			b.role, _, _ = unstructured.NestedString(crb.Object, "roleRef", "name")
		}
		subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
		seen := map[string]bool{}
		for _, s := range subjects {
			m, _ := s.(map[string]any)
			kind, _ := m["kind"].(string)
			ns, _ := m["namespace"].(string)
			name, _ := m["name"].(string)
			if key := ns + "/" + name; kind == "ServiceAccount" && ns != "" && name != "" && !seen[key] {
				seen[key] = true
				out[key] = append(out[key], b)
			}
		}
	}
	for _, bs := range out {
		sort.Slice(bs, func(i, j int) bool { return bs[i].name < bs[j].name })
	}
	return out
}

// fsBackupWarnings are the backup's warnings for the volumes of pod that
// its annotations (or defaultVolumesToFsBackup) choose for file-system
// backup but that cannot be copied (package podvolume says why): the
// salvor.dev/pod-volumes action copies the others.
func fsBackupWarnings(pod *unstructured.Unstructured, defaultFS bool) []string {
	typed := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(pod.Object, typed); err != nil {
		return []string{fmt.Sprintf("reading the pod to choose its volumes for file-system backup: %v", err)}
	}
	var out []string
	for _, s := range podvolume.Choose(typed, defaultFS, nil).Skipped {
		out = append(out, "the files of volume "+s.Volume+" are not in the backup: "+s.Reason)
	}
	return out
}
