// Command veleroplugin serves one plugin of every kind Velero has, built with
// Velero's own plugin framework, for Salvor's compatibility tests.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
)

func main() {
	framework.NewServer().
		RegisterBackupItemAction("compat.velero.io/bia-v1", func(logrus.FieldLogger) (any, error) { return biaV1{}, nil }).
		RegisterBackupItemActionV2("compat.velero.io/bia-v2", func(logrus.FieldLogger) (any, error) { return &biaV2{}, nil }).
		RegisterBackupItemActionV2("compat.velero.io/bench", func(logrus.FieldLogger) (any, error) { return bench{}, nil }).
		RegisterRestoreItemAction("compat.velero.io/ria-v1", func(logrus.FieldLogger) (any, error) { return riaV1{}, nil }).
		RegisterRestoreItemActionV2("compat.velero.io/ria-v2", func(logrus.FieldLogger) (any, error) { return riaV2{}, nil }).
		RegisterDeleteItemAction("compat.velero.io/dia", func(logrus.FieldLogger) (any, error) { return dia{}, nil }).
		RegisterObjectStore("compat.velero.io/memory", func(logrus.FieldLogger) (any, error) { return &store{objects: map[string][]byte{}}, nil }).
		RegisterVolumeSnapshotter("compat.velero.io/vs", func(logrus.FieldLogger) (any, error) { return &vs{}, nil }).
		// A kind Salvor does not run (Velero 1.15's ItemBlockAction): its
		// host passes it over and runs the others.
		RegisterItemBlockAction("compat.velero.io/iba", func(logrus.FieldLogger) (any, error) { return iba{}, nil }).
		Serve()
}

type iba struct{}

func (iba) Name() string { return "compat.velero.io/iba" }
func (iba) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}
func (iba) GetRelatedItems(runtime.Unstructured, *api.Backup) ([]velero.ResourceIdentifier, error) {
	return nil, nil
}

func annotate(item runtime.Unstructured, by string) runtime.Unstructured {
	obj := item.(*unstructured.Unstructured).DeepCopy()
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["compat/by"] = by
	obj.SetAnnotations(ann)
	return obj
}

var cm = schema.GroupResource{Resource: "configmaps"}

type biaV1 struct{}

func (biaV1) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"configmaps"}, LabelSelector: "app=compat"}, nil
}

func (biaV1) Execute(item runtime.Unstructured, backup *api.Backup) (runtime.Unstructured, []velero.ResourceIdentifier, error) {
	if item.(*unstructured.Unstructured).GetName() == "fail" {
		return nil, nil, errors.New("velero plugin refused item fail")
	}
	return annotate(item, "bia-v1 backup="+backup.Name+" ns="+strings.Join(backup.Spec.IncludedNamespaces, ",")),
		[]velero.ResourceIdentifier{{GroupResource: cm, Namespace: "ns", Name: "extra"}}, nil
}

type biaV2 struct {
	mu        sync.Mutex
	cancelled []string
}

func (*biaV2) Name() string { return "compat.velero.io/bia-v2" }

func (*biaV2) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedNamespaces: []string{"ns"}}, nil
}

func (*biaV2) Execute(item runtime.Unstructured, backup *api.Backup) (runtime.Unstructured, []velero.ResourceIdentifier, string, []velero.ResourceIdentifier, error) {
	name := item.(*unstructured.Unstructured).GetName()
	return annotate(item, "bia-v2"), nil, "velero-op-" + name + "-" + backup.Name,
		[]velero.ResourceIdentifier{{GroupResource: cm, Namespace: "ns", Name: name}}, nil
}

func (a *biaV2) Progress(id string, backup *api.Backup) (velero.OperationProgress, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return velero.OperationProgress{
		Completed: len(a.cancelled) > 0, NCompleted: 3, NTotal: 9, OperationUnits: "items",
		Description: id + " of " + backup.Name + " cancelled=" + strings.Join(a.cancelled, ","),
		Started:     time.Unix(1700000000, 0).UTC(), Updated: time.Unix(1700000100, 0).UTC(),
	}, nil
}

func (a *biaV2) Cancel(id string, _ *api.Backup) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cancelled = append(a.cancelled, id)
	return nil
}

// bench is the same action as Salvor's benchmark plugin: it annotates the
// item and starts no operation.
type bench struct{}

func (bench) Name() string                                { return "compat.velero.io/bench" }
func (bench) AppliesTo() (velero.ResourceSelector, error) { return velero.ResourceSelector{}, nil }
func (bench) Execute(item runtime.Unstructured, _ *api.Backup) (runtime.Unstructured, []velero.ResourceIdentifier, string, []velero.ResourceIdentifier, error) {
	return annotate(item, "bench"), nil, "", nil, nil
}
func (bench) Progress(string, *api.Backup) (velero.OperationProgress, error) {
	return velero.OperationProgress{}, nil
}
func (bench) Cancel(string, *api.Backup) error { return nil }

type riaV1 struct{}

func (riaV1) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}

func (riaV1) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	out := velero.NewRestoreItemActionExecuteOutput(annotate(in.Item, "ria-v1 restore="+in.Restore.Name))
	out.AdditionalItems = []velero.ResourceIdentifier{{GroupResource: cm, Namespace: "ns", Name: "dep"}}
	if in.ItemFromBackup.(*unstructured.Unstructured).GetName() == "skip" {
		out = out.WithoutRestore()
	}
	return out, nil
}

type riaV2 struct{}

func (riaV2) Name() string { return "compat.velero.io/ria-v2" }
func (riaV2) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}

func (riaV2) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	return &velero.RestoreItemActionExecuteOutput{
		UpdatedItem:                 annotate(in.Item, "ria-v2"),
		AdditionalItems:             []velero.ResourceIdentifier{{GroupResource: cm, Namespace: "ns", Name: "dep"}},
		OperationID:                 "velero-restore-op",
		WaitForAdditionalItems:      true,
		AdditionalItemsReadyTimeout: 2 * time.Minute,
	}, nil
}

func (riaV2) Progress(id string, r *api.Restore) (velero.OperationProgress, error) {
	return velero.OperationProgress{NCompleted: 4, NTotal: 8, Description: id + " of " + r.Name}, nil
}

func (riaV2) Cancel(string, *api.Restore) error { return nil }

func (riaV2) AreAdditionalItemsReady(items []velero.ResourceIdentifier, _ *api.Restore) (bool, error) {
	return len(items) == 1 && items[0].Name == "dep", nil
}

type dia struct{}

func (dia) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"pods"}}, nil
}

func (dia) Execute(in *velero.DeleteItemActionExecuteInput) error {
	if in.Backup.Name == "" {
		return errors.New("no backup")
	}
	return nil
}

type store struct {
	mu      sync.Mutex
	prefix  string
	objects map[string][]byte
}

func (s *store) Init(config map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prefix = config["prefix"]
	return nil
}

func (s *store) PutObject(bucket, key string, body io.Reader) error {
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[bucket+"/"+s.prefix+key] = b
	return nil
}

func (s *store) ObjectExists(bucket, key string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.objects[bucket+"/"+s.prefix+key]
	return ok, nil
}

func (s *store) GetObject(bucket, key string) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.objects[bucket+"/"+s.prefix+key]
	if !ok {
		return nil, fmt.Errorf("key %s not found", key)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (s *store) ListCommonPrefixes(bucket, prefix, delimiter string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for k := range s.objects {
		rest, ok := strings.CutPrefix(k, bucket+"/"+s.prefix+prefix)
		if !ok {
			continue
		}
		if i := strings.Index(rest, delimiter); i >= 0 {
			seen[prefix+rest[:i+len(delimiter)]] = true
		}
	}
	return sorted(seen), nil
}

func (s *store) ListObjects(bucket, prefix string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for k := range s.objects {
		if rest, ok := strings.CutPrefix(k, bucket+"/"+s.prefix); ok && strings.HasPrefix(rest, prefix) {
			seen[rest] = true
		}
	}
	return sorted(seen), nil
}

func (s *store) DeleteObject(bucket, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects, bucket+"/"+s.prefix+key)
	return nil
}

func (s *store) CreateSignedURL(bucket, key string, ttl time.Duration) (string, error) {
	return fmt.Sprintf("https://%s/%s%s?ttl=%s", bucket, s.prefix, key, ttl), nil
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type vs struct{ region string }

func (v *vs) Init(config map[string]string) error { v.region = config["region"]; return nil }

func (v *vs) CreateVolumeFromSnapshot(snapshotID, volumeType, volumeAZ string, iops *int64) (string, error) {
	n := int64(-1)
	if iops != nil {
		n = *iops
	}
	return fmt.Sprintf("vol-%s-%s-%s-%d-%s", snapshotID, volumeType, volumeAZ, n, v.region), nil
}

func (v *vs) GetVolumeID(pv runtime.Unstructured) (string, error) {
	id, _, err := unstructured.NestedString(pv.UnstructuredContent(), "spec", "csi", "volumeHandle")
	return id, err
}

func (v *vs) SetVolumeID(pv runtime.Unstructured, volumeID string) (runtime.Unstructured, error) {
	obj := pv.(*unstructured.Unstructured).DeepCopy()
	return obj, unstructured.SetNestedField(obj.Object, volumeID, "spec", "csi", "volumeHandle")
}

func (v *vs) GetVolumeInfo(volumeID, volumeAZ string) (string, *int64, error) {
	iops := int64(1000)
	return "io2-" + volumeAZ, &iops, nil
}

func (v *vs) CreateSnapshot(volumeID, volumeAZ string, tags map[string]string) (string, error) {
	return "snap-" + volumeID + "-" + tags["velero.io/backup"], nil
}

func (v *vs) DeleteSnapshot(snapshotID string) error {
	if snapshotID == "missing" {
		return errors.New("snapshot missing not found")
	}
	return nil
}
