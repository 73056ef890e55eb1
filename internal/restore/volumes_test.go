package restore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/salvor-dev/salvor/internal/archive"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestRelatedItemsFollowTheSelectedOnes restores, on a real API server,
// a namespace whose pod alone carries the label the restore selects: the
// pod brings its claim and the claim its volume, as in Velero, within the
// restore's resource filters and includeClusterResources; an unlabelled
// item nothing needs stays out.
func TestRelatedItemsFollowTheSelectedOnes(t *testing.T) {
	e, _ := testEngine(t)
	dyn := e.Dynamic
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	no, yes := false, true

	for i, tc := range []struct {
		name string
		spec salvorv1.RestoreSpec
		want []string // of pod, claim, volume, configmap
		// volumeOf is the claim the volume names, when not the pod's.
		volumeOf, warning string
	}{
		// A volume without a snapshot that only a claim brings is not made
		// from the source the backup names (a host path here): its claim
		// is provisioned anew, unless the restore asks for cluster
		// resources.
		{"by label", salvorv1.RestoreSpec{LabelSelector: web}, []string{"pod", "claim"}, "",
			"persistentvolumes pv-0: not restored: no snapshot or moved data, and it comes only with its claim: a restore that does not select persistentvolumes makes no volume from the source a backup names (hostPath)"},
		{"by label in the namespace", salvorv1.RestoreSpec{LabelSelector: web, IncludedNamespaces: []string{"src-1"}}, []string{"pod", "claim"}, "",
			"persistentvolumes pv-1: not restored: no snapshot or moved data, and it comes only with its claim"},
		{"by label with cluster resources", salvorv1.RestoreSpec{LabelSelector: web, IncludeClusterResources: &yes}, []string{"pod", "claim", "volume"}, "", ""},
		{"no cluster resources", salvorv1.RestoreSpec{LabelSelector: web, IncludeClusterResources: &no}, []string{"pod", "claim"}, "", ""},
		{"claims excluded", salvorv1.RestoreSpec{LabelSelector: web, ExcludedResources: []string{"persistentvolumeclaims"}}, []string{"pod"}, "", ""},
		{"volumes excluded", salvorv1.RestoreSpec{LabelSelector: web, ExcludedResources: []string{"pv"}}, []string{"pod", "claim"}, "", ""},
		{"pods only", salvorv1.RestoreSpec{IncludedResources: []string{"pods"}}, []string{"pod"}, "", ""},
		{"everything", salvorv1.RestoreSpec{}, []string{"pod", "claim", "volume", "configmap"}, "", ""},
		// A backup is untrusted: a volume that does not name the claim
		// back would be free for a claim elsewhere to bind.
		{"volume of another claim", salvorv1.RestoreSpec{LabelSelector: web}, []string{"pod", "claim"}, "victim/data",
			"persistentvolumeclaims src-8/data: its volume pv-8 names claim victim/data, not this one: not restored with it"},
		{"volume of another claim, in the namespace", salvorv1.RestoreSpec{IncludedNamespaces: []string{"src-9"}}, []string{"pod", "claim", "configmap"}, "victim/data",
			"persistentvolumeclaims src-9/data: its volume pv-9 names claim victim/data, not this one: not restored with it"},
		{"volume of no claim", salvorv1.RestoreSpec{LabelSelector: web}, []string{"pod", "claim"}, "/",
			"persistentvolumeclaims src-10/data: its volume pv-10 names no claim, not this one: not restored with it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, pv := fmt.Sprintf("src-%d", i), fmt.Sprintf("pv-%d", i)
			claimRef := ns + "/data"
			if tc.volumeOf != "" {
				claimRef = tc.volumeOf
			}
			tarball := relatedBackup(t, ns, pv, claimRef)
			spec := tc.spec
			spec.BackupName = "b"
			rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "salvor"}, Spec: spec}
			out, err := e.Run(context.Background(), rs, bytes.NewReader(tarball), slog.New(slog.DiscardHandler), nil)
			if err != nil {
				t.Fatal(err)
			}
			warnings := fmt.Sprint(out.Results.Warnings)
			if out.Results.Errors.Count() != 0 || out.Results.Warnings.Count() != min(len(tc.warning), 1) || !strings.Contains(warnings, tc.warning) {
				t.Errorf("errors %v, warnings %s, want %q", out.Results.Errors, warnings, tc.warning)
			}
			var got []string
			for what, at := range map[string]struct {
				gvr      schema.GroupVersionResource
				ns, name string
			}{
				"pod":       {schema.GroupVersionResource{Version: "v1", Resource: "pods"}, ns, "web"},
				"claim":     {schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, ns, "data"},
				"volume":    {pvResource, "", pv},
				"configmap": {schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns, "other"},
			} {
				_, err := dyn.Resource(at.gvr).Namespace(at.ns).Get(context.Background(), at.name, metav1.GetOptions{})
				switch {
				case err == nil:
					got = append(got, what)
				case !apierrors.IsNotFound(err):
					t.Fatal(err)
				}
			}
			slices.Sort(got)
			if want := slices.Sorted(slices.Values(tc.want)); !slices.Equal(got, want) {
				t.Errorf("restored %v, want %v", got, tc.want)
			}
			if out.Progress.ItemsRestored != out.Progress.TotalItems {
				t.Errorf("progress %+v", out.Progress)
			}
		})
	}
}

// relatedBackup is a backup of namespace ns: a labelled pod mounting an
// unlabelled claim of static volume pv, which names claimRef
// ("namespace/name"), and an unlabelled config map.
func relatedBackup(t *testing.T, ns, pv, claimRef string) []byte {
	refNS, refName, _ := strings.Cut(claimRef, "/")
	var tarball bytes.Buffer
	w, err := archive.NewWriter(&tarball)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range []struct {
		resource, ns, name, body string
	}{
		{"namespaces", "", ns, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%[1]s"}}`},
		{"pods", ns, "web", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"%[1]s","labels":{"app":"web"}},` +
			`"spec":{"containers":[{"name":"c","image":"nginx"}],"volumes":[{"name":"d","persistentVolumeClaim":{"claimName":"data"}}]}}`},
		{"persistentvolumeclaims", ns, "data", `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"%[1]s"},` +
			`"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},"volumeName":"%[2]s"}}`},
		{"persistentvolumes", "", pv, `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"%[2]s"},` +
			`"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Retain","hostPath":{"path":"/srv/%[2]s"},"claimRef":{"namespace":"%[3]s","name":"%[4]s"}}}`},
		{"configmaps", ns, "other", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other","namespace":"%[1]s"}}`},
	} {
		if err := w.WriteItem(schema.GroupVersionResource{Version: "v1", Resource: it.resource}, it.ns, it.name, fmt.Appendf(nil, it.body, ns, pv, refNS, refName)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return tarball.Bytes()
}

// madeFrom records the volumes a restore asks to make from snapshots; it
// stands in for a snapshotter's cloud API.
type madeFrom struct{ names []string }

func (m *madeFrom) RestoreVolume(_ context.Context, pv *unstructured.Unstructured) (*unstructured.Unstructured, bool, error) {
	m.names = append(m.names, pv.GetName())
	out := pv.DeepCopy()
	_ = unstructured.SetNestedField(out.Object, "/srv/from-snapshot", "spec", "hostPath", "path")
	return out, true, nil
}

// pvGetFails fails every GET of a persistent volume, as an API server
// that cannot be reached for a moment would.
type pvGetFails struct{ dynamic.Interface }

func (d pvGetFails) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	ri := d.Interface.Resource(gvr)
	if gvr.Resource == "persistentvolumes" {
		return failingGet{ri}
	}
	return ri
}

type failingGet struct {
	dynamic.NamespaceableResourceInterface
}

func (failingGet) Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error) {
	return nil, errors.New("connection refused")
}

// TestLiveVolumeIsNotMadeFromItsSnapshot restores, on a real API server, a
// snapshotted volume in place: made from its snapshot when the cluster has
// no volume of its name; not made while the cluster has one (the new
// volume would be left unused); and, when the cluster cannot be asked,
// not restored at all, with an error — made as backed up, it would point
// at the old storage, not at the snapshot's data.
func TestLiveVolumeIsNotMadeFromItsSnapshot(t *testing.T) {
	e, _ := testEngine(t)
	tarball := relatedBackup(t, "live", "pv-live", "live/data")
	run := func(name string, e *Engine) (*Outcome, *madeFrom) {
		made := &madeFrom{}
		rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "b"}}
		out, err := e.RunWithVolumes(context.Background(), rs, bytes.NewReader(tarball), Volumes{Restorer: made, Snapshotted: map[string]bool{"pv-live": true}},
			slog.New(slog.DiscardHandler), nil)
		if err != nil {
			t.Fatal(err)
		}
		return out, made
	}
	unreachable := *e
	unreachable.Dynamic = pvGetFails{e.Dynamic}
	out, made := run("unreachable", &unreachable)
	if errs := fmt.Sprint(out.Results.Errors); len(made.names) != 0 ||
		!strings.Contains(errs, "persistentvolumes pv-live: could not tell whether the cluster still has it, so it was not restored from its snapshot: connection refused") {
		t.Errorf("cluster not asked: made %v, errors %s", made.names, errs)
	}
	if _, err := e.Dynamic.Resource(pvResource).Get(context.Background(), "pv-live", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a volume was made as backed up when the cluster could not be asked: %v", err)
	}

	if out, made = run("first", e); len(made.names) != 1 || out.Results.Errors.Count() != 0 {
		t.Errorf("no volume of its name: made %v, errors %v", made.names, out.Results.Errors)
	}
	if out, made = run("again", e); len(made.names) != 0 || out.Results.Errors.Count() != 0 {
		t.Errorf("the cluster has the volume: made %v, errors %v", made.names, out.Results.Errors)
	}
}
