// Command testplugin serves one plugin of every kind and version for the
// host's tests. Its behaviour is steered by annotations on the items it gets
// ("test.salvor.dev/do") and by the keys and IDs it is asked about, so the
// tests can make it answer, fail, panic, hang, crash or watch its context.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

func main() {
	sdk.NewServer().
		RegisterBackupItemAction("test.salvor.dev/bia-v1", func(*slog.Logger) (sdk.BackupItemAction, error) { return biaV1{}, nil }).
		RegisterBackupItemActionV2("test.salvor.dev/bia-v2", func(l *slog.Logger) (sdk.BackupItemActionV2, error) { return &biaV2{log: l}, nil }).
		RegisterRestoreItemAction("test.salvor.dev/ria-v1", func(*slog.Logger) (sdk.RestoreItemAction, error) { return riaV1{}, nil }).
		RegisterRestoreItemActionV2("test.salvor.dev/ria-v2", func(*slog.Logger) (sdk.RestoreItemActionV2, error) { return riaV2{}, nil }).
		RegisterDeleteItemAction("test.salvor.dev/dia", func(*slog.Logger) (sdk.DeleteItemAction, error) { return dia{}, nil }).
		RegisterObjectStore("test.salvor.dev/memory", func(*slog.Logger) (sdk.ObjectStore, error) { return &memStore{objects: map[string][]byte{}}, nil }).
		RegisterVolumeSnapshotter("test.salvor.dev/vs-v1", func(*slog.Logger) (sdk.VolumeSnapshotter, error) { return &vs{}, nil }).
		RegisterVolumeSnapshotterV2("test.salvor.dev/vs-v2", func(*slog.Logger) (sdk.VolumeSnapshotterV2, error) { return &vsV2{}, nil }).
		Serve()
}

const doKey = "test.salvor.dev/do"

// behave does what an item's annotation asks, before the plugin answers.
func behave(ctx context.Context, u runtime.Unstructured) error {
	obj, _ := u.(*unstructured.Unstructured)
	if obj == nil {
		return nil
	}
	return act(ctx, obj.GetAnnotations()[doKey])
}

func act(ctx context.Context, what string) error {
	switch what {
	case "error":
		return sdk.Errorf("the test asked for an error")
	case "panic":
		panic("the test asked for a panic")
	case "crash":
		// An unrecovered panic on another goroutine kills the process, as
		// a real plugin bug would; the runtime writes it to stderr.
		go func() { panic("the test asked for a crash") }()
		time.Sleep(time.Hour)
	case "exit":
		// Lines written to os.Stderr after Serve travel over go-plugin's
		// stdio stream rather than the raw pipe.
		fmt.Fprintln(os.Stderr, "exiting: the test asked for it")
		time.Sleep(100 * time.Millisecond)
		os.Exit(3)
	case "wait-ctx":
		sdk.NewLogger(os.Stderr, slog.LevelInfo).Info("waiting on its context")
		<-ctx.Done()
		return fmt.Errorf("stopped by the host: %w", ctx.Err())
	case "ignore-ctx":
		time.Sleep(time.Hour)
	case "sleep":
		time.Sleep(300 * time.Millisecond)
	case "log":
		sdk.NewLogger(os.Stderr, slog.LevelDebug).Warn("a warning from the plugin", "detail", 42)
	}
	return nil
}

// mark returns the item with an annotation naming the plugin and, when the
// call has a deadline, how far off it was.
func mark(ctx context.Context, u runtime.Unstructured, by string) runtime.Unstructured {
	obj := u.(*unstructured.Unstructured).DeepCopy()
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["test.salvor.dev/by"] = by
	if ctx != nil {
		if d, ok := ctx.Deadline(); ok {
			ann["test.salvor.dev/deadline-in"] = time.Until(d).Round(time.Second).String()
		}
	}
	obj.SetAnnotations(ann)
	return obj
}

var cm = schema.GroupResource{Resource: "configmaps"}

type biaV1 struct{}

func (biaV1) AppliesTo() (sdk.ResourceSelector, error) {
	return sdk.ResourceSelector{IncludedResources: []string{"configmaps"}, LabelSelector: "app=test"}, nil
}

func (biaV1) Execute(item runtime.Unstructured, _ *sdk.Backup) (runtime.Unstructured, []sdk.ResourceIdentifier, error) {
	if err := behave(context.Background(), item); err != nil {
		return nil, nil, err
	}
	return mark(nil, item, "bia-v1"), []sdk.ResourceIdentifier{{GroupResource: cm, Namespace: "ns", Name: "extra-v1"}}, nil
}

type biaV2 struct {
	log *slog.Logger
	mu  sync.Mutex
	// cancelled records Cancel calls; Progress reports them.
	cancelled []string
}

func (*biaV2) Name() string { return "ignored: the host answers Name itself" }

func (*biaV2) AppliesTo() (sdk.ResourceSelector, error) {
	return sdk.ResourceSelector{IncludedNamespaces: []string{"ns"}, ExcludedResources: []string{"secrets"}}, nil
}

func (a *biaV2) Execute(item runtime.Unstructured, backup *sdk.Backup) (runtime.Unstructured, []sdk.ResourceIdentifier, string, []sdk.ResourceIdentifier, error) {
	return a.ExecuteWithContext(context.Background(), item, backup)
}

func (a *biaV2) ExecuteWithContext(ctx context.Context, item runtime.Unstructured, backup *sdk.Backup) (runtime.Unstructured, []sdk.ResourceIdentifier, string, []sdk.ResourceIdentifier, error) {
	if err := behave(ctx, item); err != nil {
		return nil, nil, "", nil, err
	}
	name := item.(*unstructured.Unstructured).GetName()
	a.log.Info("executing", "item", name, "backup", backup.Name)
	return mark(ctx, item, "bia-v2"),
		[]sdk.ResourceIdentifier{{GroupResource: cm, Namespace: "ns", Name: "extra-v2"}},
		"op-" + name + "-" + backup.Name,
		[]sdk.ResourceIdentifier{{GroupResource: cm, Namespace: "ns", Name: name}},
		nil
}

func (a *biaV2) Progress(id string, backup *sdk.Backup) (sdk.OperationProgress, error) {
	if strings.HasSuffix(id, "-error") {
		return sdk.OperationProgress{}, errors.New("no such operation: " + id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return sdk.OperationProgress{
		Completed:      true,
		NCompleted:     7,
		NTotal:         7,
		OperationUnits: "widgets",
		Description:    fmt.Sprintf("%s of %s; cancelled: %s", id, backup.Name, strings.Join(a.cancelled, ",")),
		Started:        time.Unix(1700000000, 0).UTC(),
		Updated:        time.Unix(1700000060, 0).UTC(),
	}, nil
}

func (a *biaV2) Cancel(id string, _ *sdk.Backup) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cancelled = append(a.cancelled, id)
	return nil
}

type riaV1 struct{}

func (riaV1) AppliesTo() (sdk.ResourceSelector, error) { return sdk.ResourceSelector{}, nil }

func (riaV1) Execute(in *sdk.RestoreItemActionExecuteInput) (*sdk.RestoreItemActionExecuteOutput, error) {
	if err := behave(context.Background(), in.Item); err != nil {
		return nil, err
	}
	out := sdk.NewRestoreItemActionExecuteOutput(mark(nil, in.Item, "ria-v1"))
	out.AdditionalItems = []sdk.ResourceIdentifier{{GroupResource: cm, Namespace: "ns", Name: "dep"}}
	if in.ItemFromBackup.(*unstructured.Unstructured).GetName() == "skip-me" {
		out.WithoutRestore()
	}
	return out, nil
}

type riaV2 struct{}

func (riaV2) Name() string { return "" }
func (riaV2) AppliesTo() (sdk.ResourceSelector, error) {
	return sdk.ResourceSelector{IncludedResources: []string{"*"}}, nil
}

func (riaV2) Execute(in *sdk.RestoreItemActionExecuteInput) (*sdk.RestoreItemActionExecuteOutput, error) {
	if err := behave(context.Background(), in.Item); err != nil {
		return nil, err
	}
	return &sdk.RestoreItemActionExecuteOutput{
		UpdatedItem:                 mark(nil, in.Item, "ria-v2 restore="+in.Restore.Name+" from="+in.ItemFromBackup.(*unstructured.Unstructured).GetName()),
		AdditionalItems:             []sdk.ResourceIdentifier{{GroupResource: cm, Namespace: "ns", Name: "dep"}},
		OperationID:                 "restore-op",
		WaitForAdditionalItems:      true,
		AdditionalItemsReadyTimeout: 90 * time.Second,
	}, nil
}

func (riaV2) Progress(id string, r *sdk.Restore) (sdk.OperationProgress, error) {
	return sdk.OperationProgress{NCompleted: 1, NTotal: 2, OperationUnits: "steps", Description: id + " for " + r.Name}, nil
}

func (riaV2) Cancel(id string, _ *sdk.Restore) error {
	if id == "refuse" {
		return errors.New("cannot cancel " + id)
	}
	return nil
}

func (riaV2) AreAdditionalItemsReady(items []sdk.ResourceIdentifier, _ *sdk.Restore) (bool, error) {
	return len(items) == 1 && items[0].Name == "dep", nil
}

type dia struct{}

func (dia) AppliesTo() (sdk.ResourceSelector, error) {
	return sdk.ResourceSelector{IncludedResources: []string{"pods"}}, nil
}

func (dia) Execute(in *sdk.DeleteItemActionExecuteInput) error {
	if err := behave(context.Background(), in.Item); err != nil {
		return err
	}
	if in.Backup.Name == "" {
		return errors.New("delete action got no backup")
	}
	return nil
}

// memStore keeps objects in memory; Init's config "fail" makes Init fail.
// Object _meta/inits holds how many times Init was called.
type memStore struct {
	mu      sync.Mutex
	config  map[string]string
	objects map[string][]byte
	inits   int
}

func (s *memStore) Init(config map[string]string) error {
	if config["fail"] != "" {
		return errors.New("bad config: " + config["fail"])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.config = config
	s.inits++
	return nil
}

func (s *memStore) key(bucket, key string) string { return s.config["prefix"] + bucket + "/" + key }

func (s *memStore) PutObjectWithContext(ctx context.Context, bucket, key string, body io.Reader) error {
	if err := act(ctx, key); err != nil {
		return err
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[s.key(bucket, key)] = b
	return nil
}

func (s *memStore) PutObject(bucket, key string, body io.Reader) error {
	return s.PutObjectWithContext(context.Background(), bucket, key, body)
}

func (s *memStore) ObjectExists(bucket, key string) (bool, error) {
	if err := act(context.Background(), key); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.objects[s.key(bucket, key)]
	return ok, nil
}

func (s *memStore) GetObject(bucket, key string) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bucket == "_meta" && key == "inits" {
		return io.NopCloser(strings.NewReader(fmt.Sprint(s.inits))), nil
	}
	b, ok := s.objects[s.key(bucket, key)]
	if !ok {
		return nil, fmt.Errorf("object %s/%s not found", bucket, key)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (s *memStore) ListCommonPrefixes(bucket, prefix, delimiter string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	base := s.key(bucket, "")
	for k := range s.objects {
		rest, ok := strings.CutPrefix(k, base+prefix)
		if !ok {
			continue
		}
		if i := strings.Index(rest, delimiter); i >= 0 {
			seen[prefix+rest[:i+len(delimiter)]] = true
		}
	}
	return sortedKeys(seen), nil
}

func (s *memStore) ListObjects(bucket, prefix string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	base := s.key(bucket, "")
	for k := range s.objects {
		if rest, ok := strings.CutPrefix(k, base); ok && strings.HasPrefix(rest, prefix) {
			seen[rest] = true
		}
	}
	return sortedKeys(seen), nil
}

func (s *memStore) DeleteObject(bucket, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects, s.key(bucket, key))
	return nil
}

func (s *memStore) CreateSignedURL(bucket, key string, ttl time.Duration) (string, error) {
	return fmt.Sprintf("mem://%s/%s?ttl=%s&prefix=%s", bucket, key, ttl, s.config["prefix"]), nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// vs is a v1 snapshotter whose IDs are derived from their inputs.
type vs struct{ config map[string]string }

func (v *vs) Init(config map[string]string) error { v.config = config; return nil }

func (v *vs) CreateVolumeFromSnapshot(snapshotID, volumeType, volumeAZ string, iops *int64) (string, error) {
	n := int64(0)
	if iops != nil {
		n = *iops
	}
	return fmt.Sprintf("vol-from-%s-%s-%s-%d-%s", snapshotID, volumeType, volumeAZ, n, v.config["region"]), nil
}

func (v *vs) GetVolumeInfo(volumeID, volumeAZ string) (string, *int64, error) {
	iops := int64(len(volumeID))
	return "type-" + volumeAZ, &iops, nil
}

func (v *vs) CreateSnapshot(volumeID, volumeAZ string, tags map[string]string) (string, error) {
	if err := act(context.Background(), volumeID); err != nil {
		return "", err
	}
	return fmt.Sprintf("snap-%s-%s-%s", volumeID, volumeAZ, tags["backup"]), nil
}

func (v *vs) DeleteSnapshot(snapshotID string) error {
	if snapshotID == "missing" {
		return errors.New("snapshot missing does not exist")
	}
	return nil
}

func (v *vs) GetVolumeID(pv runtime.Unstructured) (string, error) {
	id, _, err := unstructured.NestedString(pv.UnstructuredContent(), "spec", "hostPath", "path")
	return id, err
}

func (v *vs) SetVolumeID(pv runtime.Unstructured, volumeID string) (runtime.Unstructured, error) {
	obj := pv.(*unstructured.Unstructured).DeepCopy()
	if err := unstructured.SetNestedField(obj.Object, volumeID, "spec", "hostPath", "path"); err != nil {
		return nil, err
	}
	return obj, nil
}

type vsV2 struct{ vs }

func (*vsV2) Name() string { return "" }

func (v *vsV2) CreateSnapshotWithContext(ctx context.Context, volumeID, volumeAZ string, tags map[string]string) (string, error) {
	if err := act(ctx, volumeID); err != nil {
		return "", err
	}
	return v.vs.CreateSnapshot(volumeID, volumeAZ, tags)
}

func (v *vsV2) Progress(id string) (sdk.OperationProgress, error) {
	return sdk.OperationProgress{NCompleted: 512, NTotal: 1024, OperationUnits: "bytes", Description: id}, nil
}

func (v *vsV2) Cancel(id string) error {
	if id == "" {
		return errors.New("empty operation ID")
	}
	return nil
}
