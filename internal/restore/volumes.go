package restore

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/zeebo/xxh3"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

var (
	pvResource  = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	pvcResource = schema.GroupResource{Resource: "persistentvolumeclaims"}
	podResource = schema.GroupResource{Resource: "pods"}
)

// restoreRelated restores first what an item cannot work without, as
// Velero's restore brings it whatever the label selector says: a pod's
// claims, and a claim's volume (unless the claim is made anew from its CSI
// snapshot). A restore selecting an app by label thus brings the volumes
// its pods use even when their claims are not labelled. The resource and
// namespace filters still apply, includeClusterResources false keeps the
// volume out, and a volume comes only if it names the claim back
// (claimOfVolume).
func (r *run) restoreRelated(ctx context.Context, it *entry, obj *unstructured.Unstructured, w *worker, what string) {
	var related []itemKey
	switch it.kind.gr {
	case podResource:
		for _, claim := range resources.PodClaims(obj) {
			related = append(related, key(pvcResource, it.namespace, claim))
		}
	case pvcResource:
		if it.selected && r.selection().needsAtRead() {
			break // its volume was restored before it, or refused, as needed (see needs)
		}
		if pv, _, _ := unstructured.NestedString(obj.Object, "spec", "volumeName"); pv != "" && !r.fromCSISnapshot(obj) {
			related = append(related, key(pvResource.GroupResource(), "", pv))
		}
	}
	for _, k := range related {
		l, ok, err := r.spool.find(k)
		if err != nil {
			r.rec.Error(r.selection().targetNamespace(it.namespace), fmt.Sprintf("%s: finding what it needs in the backup: %v", what, err))
			continue
		}
		if !ok || l.done {
			continue // not in the backup (the cluster may have it), or restored
		}
		dep, err := r.spool.load(l)
		if err != nil {
			r.rec.Error(r.selection().targetNamespace(it.namespace), fmt.Sprintf("%s: finding what it needs in the backup: %v", what, err))
			continue
		}
		if !dep.selected && !r.selection().additionalAllowed(dep.kind.gr, dep.namespace, dep.name) {
			r.log.Info("not restored with the item that needs it: the restore's filters leave it out",
				"item", what, "needs", describe(dep.kind.gr, dep.namespace, dep.name))
			continue
		}
		if !dep.selected && it.kind.gr == pvcResource {
			claim := it.namespace + "/" + it.name
			pv, err := archive.DecodeObject(dep.body)
			if err != nil {
				r.rec.Error(r.selection().targetNamespace(it.namespace), fmt.Sprintf("%s: reading its volume %s from the spool: %v", what, dep.name, err))
				continue
			}
			if whose := claimOfVolume(dep.kind.gr, &unstructured.Unstructured{Object: pv}); whose != claim {
				r.rec.Warning(r.selection().targetNamespace(it.namespace), volumeNotTheirs(claim, dep.name, whose))
				continue
			}
		}
		r.restoreItem(ctx, dep, w)
	}
}

// claimOfVolume is the claim ("namespace/name", as backed up) a volume
// names, "" for another item. A volume comes with a claim that does not
// select it only when it names that claim back: the backup is untrusted,
// and a volume bound to nothing (or to a claim elsewhere) would be one any
// claim of the cluster (or that one) could bind, a host path say.
func claimOfVolume(gr schema.GroupResource, obj *unstructured.Unstructured) string {
	if gr != pvResource.GroupResource() {
		return ""
	}
	ns, _, _ := unstructured.NestedString(obj.Object, "spec", "claimRef", "namespace")
	name, _, _ := unstructured.NestedString(obj.Object, "spec", "claimRef", "name")
	if name == "" {
		return ""
	}
	return ns + "/" + name
}

func volumeNotTheirs(claim, volume, whose string) string {
	if whose == "" {
		whose = "no claim"
	} else {
		whose = "claim " + whose
	}
	return fmt.Sprintf("persistentvolumeclaims %s: its volume %s names %s, not this one: not restored with it", claim, volume, whose)
}

func namespaceOf(claim string) string {
	ns, _, _ := strings.Cut(claim, "/")
	return ns
}

// provisionAnew tells whether a persistent volume is left out so that its
// claim is provisioned anew, as Velero does: it has no snapshot to be made
// from and its reclaim policy is Delete, so its storage went when its claim
// was deleted, and the volume restored as it was would point at nothing (or,
// in a namespace copied beside the original, at the original's storage). A
// volume the cluster still has, bound to the claim this restore makes, is
// not left out: it is that claim's own, live. pv's claim reference is
// already mapped.
//
// A volume without a snapshot that comes only because a restored claim
// needs it (the restore does not select persistent volumes itself) is left
// out too, whatever its reclaim policy: made as the backup says, its source
// — a host path, NFS, iSCSI, another team's CSI volume handle — is whatever
// whoever wrote to the bucket chose, handed to every pod of the claim's
// namespace. Only a restore that selects persistent volumes (a whole-cluster
// restore, or one that sets includeClusterResources) makes them from the
// backup's source.
func (r *run) provisionAnew(ctx context.Context, it *entry, pv *unstructured.Unstructured, what string) bool {
	if r.snapshotted[it.name] {
		return false
	}
	policy, _, _ := unstructured.NestedString(pv.Object, "spec", "persistentVolumeReclaimPolicy")
	// Left out because its source is only the bucket's word, not because
	// its storage went with its claim.
	unsourced := policy != "Delete"
	if unsourced && !r.onlyForClaim(it) {
		return false
	}
	claim := claimOfVolume(pvResource.GroupResource(), pv)
	live, err := r.e.Dynamic.Resource(pvResource).Get(ctx, it.name, metav1.GetOptions{})
	switch {
	case err == nil:
		if claimOfVolume(pvResource.GroupResource(), live) == claim {
			return false
		}
	case apierrors.IsNotFound(err):
	case unsourced:
		r.rec.Warning(namespaceOf(claim), fmt.Sprintf("%s: could not tell whether the cluster still has it (%v); not made from the backup's source, its claim is provisioned anew", what, err))
	default:
		r.rec.Warning("", fmt.Sprintf("%s: could not tell whether the cluster still has it (%v); restored as it was backed up", what, err))
		return false
	}
	r.anew.Store(it.name, true)
	why := "no snapshot, and its reclaim policy is Delete: its storage went with its claim"
	if unsourced {
		why = fmt.Sprintf("no snapshot or moved data, and it comes only with its claim: a restore that does not select persistentvolumes makes no volume from the source a backup names (%s); set includeClusterResources to restore it as backed up", volumeSource(pv))
	}
	if claim != "" {
		why += ", so claim " + claim + " is provisioned anew"
	}
	if unsourced {
		// Not what the backup's owner may expect: said, not only logged.
		r.rec.Warning(namespaceOf(claim), fmt.Sprintf("%s: not restored: %s", what, why))
	}
	r.log.Info("not restored: "+why, "item", what)
	r.restored.Add(1)
	r.dry.record(describe(it.kind.gr, "", it.name), salvorv1.DryRunSkipped, why)
	return true
}

// onlyForClaim tells whether a volume is restored only because a restored
// claim needs it, not because the restore's filters select it.
func (r *run) onlyForClaim(it *entry) bool {
	if icr := r.restore.Spec.IncludeClusterResources; icr != nil && *icr {
		return false // asked for: the cluster-scoped items as the backup has them
	}
	if !it.selected {
		return true // brought by restoreRelated
	}
	_, needed := r.needed[it.kind.gr.String()+"/"+it.name]
	return needed
}

// volumeSource names the kind of source a persistent volume's spec names:
// "hostPath", "nfs", "csi driver X", ...
func volumeSource(pv *unstructured.Unstructured) string {
	spec, _, _ := unstructured.NestedMap(pv.Object, "spec")
	for k, v := range spec {
		switch k {
		case "accessModes", "capacity", "claimRef", "mountOptions", "nodeAffinity", "persistentVolumeReclaimPolicy", "storageClassName", "volumeMode", "volumeAttributesClassName":
			continue
		}
		if k == "csi" {
			if m, ok := v.(map[string]any); ok {
				return fmt.Sprintf("csi driver %v", m["driver"])
			}
		}
		return k
	}
	return "no source"
}

// warnUnbindable warns that a restored claim will not bind to the volume
// it names, which the cluster has and this restore makes no copy of (it
// has no snapshot, or volumes are not restored), so it was left as it is:
// the volume is bound to another claim (the original, when a namespace is
// copied beside it), or it is Released, still held for the deleted claim
// the restored one replaces. The claim is restored as it was, as Velero
// restores it; the warning says why it stays unbound, and for a Released
// volume how to hand it to the restored claim.
func (r *run) warnUnbindable(ctx context.Context, volume, namespace, claim, what string) {
	live, err := r.e.Dynamic.Resource(pvResource).Get(ctx, volume, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return // left out by the restore's filters: the claim keeps its volume's name, as in Velero
	case err != nil:
		r.log.Warn("could not tell whether a restored claim can bind", "item", what, "volume", volume, "error", err)
		return
	}
	ns, _, _ := unstructured.NestedString(live.Object, "spec", "claimRef", "namespace")
	name, _, _ := unstructured.NestedString(live.Object, "spec", "claimRef", "name")
	phase, _, _ := unstructured.NestedString(live.Object, "status", "phase")
	switch {
	case name == "":
	case ns != namespace || name != claim:
		r.rec.Warning(namespace, fmt.Sprintf("%s: volume %s is bound to claim %s/%s in this cluster and the restore makes no copy of it (no snapshot, or volumes not restored): the claim will not bind (Lost)",
			what, volume, ns, name))
	case phase == "Released":
		r.rec.Warning(namespace, fmt.Sprintf("%s: volume %s is Released, still held for the deleted claim %s/%s this one replaces, and the restore leaves it as it is: the claim will not bind until the volume is handed to it "+
			`(kubectl patch pv %s -p '{"spec":{"claimRef":{"uid":null,"resourceVersion":null}}}')`,
			what, volume, ns, name, volume))
	}
}

// keepsLiveVolume tells whether a volume the backup has a snapshot of is
// not to be made from it because the cluster still has a volume of its
// name that its claim, restored in place, goes on using: made anyway, the
// new volume would be left unused (the volume object cannot be created over
// the live one) — storage paid for, holding a copy of the data, that
// nothing refers to. Velero refuses for the same reason. A claim restored
// into another namespace gets a clone instead (cloneIfTaken), so its volume
// is made. A volume being deleted is left to go: it is said, and the
// restore can be run again once it has gone. When the cluster cannot be
// asked, the error is returned and the volume is not restored at all:
// made as backed up, it would point at the old storage, not at the
// snapshot's data.
func (r *run) keepsLiveVolume(ctx context.Context, pv *unstructured.Unstructured, what string) (bool, error) {
	if !r.snapshotted[pv.GetName()] {
		return false, nil // nothing would be made
	}
	if ns, _, _ := unstructured.NestedString(pv.Object, "spec", "claimRef", "namespace"); ns != "" && r.backupNamespaceOf(ns) != ns {
		return false, nil // a copy beside the original: cloned
	}
	live, err := r.e.Dynamic.Resource(pvResource).Get(ctx, pv.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("could not tell whether the cluster still has it, so it was not restored from its snapshot: %w", err)
	case live.GetDeletionTimestamp() != nil:
		r.rec.Warning("", fmt.Sprintf("%s: the cluster's volume of this name is being deleted, so it was not made from its snapshot; restore again once it has gone", what))
	default:
		r.log.Info("not made from its snapshot: the cluster has a volume of its name, which its claim goes on using", "item", what)
	}
	return true, nil
}

// cloneIfTaken renames a volume made from a snapshot for a claim restored
// into another namespace when a volume of its name is still in the
// cluster — the usual case when a namespace is copied beside the original:
// the original stays as it is, and the claim is pointed at the clone.
func (r *run) cloneIfTaken(ctx context.Context, it *entry, pv *unstructured.Unstructured, what string) {
	ns, _, _ := unstructured.NestedString(pv.Object, "spec", "claimRef", "namespace")
	if ns == "" || r.backupNamespaceOf(ns) == ns {
		return // not mapped: the claim is the original's
	}
	if _, err := r.e.Dynamic.Resource(pvResource).Get(ctx, pv.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		if err != nil {
			r.rec.Warning("", fmt.Sprintf("%s: could not tell whether its name is taken: %v", what, err))
			return
		}
		clone := cloneName(r.restore.Name, pv.GetName())
		r.clones.Store(pv.GetName(), clone)
		r.log.Info("volume restored under a new name: its own is taken", "volume", pv.GetName(), "as", clone)
		pv.SetName(clone)
	}
}

// cloneName is the name of a restored volume whose own name is taken; the
// same for the same restore and volume, so a restore run again reuses it.
func cloneName(restore, volume string) string {
	sum := xxh3.HashString128(restore + "/" + volume).Bytes()
	return "salvor-clone-" + hex.EncodeToString(sum[:6])
}
