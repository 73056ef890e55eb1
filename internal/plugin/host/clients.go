package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/pkg/plugin/api"
	biav2 "github.com/salvor-dev/salvor/pkg/plugin/proto/backupitemaction/v2"
	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
	riav2 "github.com/salvor-dev/salvor/pkg/plugin/proto/restoreitemaction/v2"
	vsv2 "github.com/salvor-dev/salvor/pkg/plugin/proto/volumesnapshotter/v2"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

// The typed clients: one thin shim per kind between the host interfaces and
// the generated stubs. Deadlines, restarts and errors are conn's business.

func describe(u *unstructured.Unstructured) string {
	if u == nil {
		return ""
	}
	gvk := u.GroupVersionKind()
	res := gvk.Kind
	if gvk.Group != "" {
		res += "." + gvk.Group
	}
	if ns := u.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", res, ns, u.GetName())
	}
	return fmt.Sprintf("%s %s", res, u.GetName())
}

func operation(id string) string { return "operation " + id }

func encodeItem(u *unstructured.Unstructured) ([]byte, error) {
	if u == nil {
		return nil, nil
	}
	return u.MarshalJSON()
}

// objectJSON remembers the JSON of the Backups (or Restores) being worked
// on: every item is sent with the same one, and encoding it once per version
// rather than once per call is a large part of a call's cost. An object is
// the same version while its pointer, resourceVersion, generation and phase
// are; a caller that changes one in memory without any of those changing
// (nothing in Salvor does) would send the older JSON.
//
// Plugins get the object without its managedFields: the API server's record
// of who set which field, which no plugin reads, was half of a Backup's JSON
// and was decoded by the plugin on every call.
type objectJSON[T any, P interface {
	*T
	metav1.Object
}] struct {
	what  string
	phase func(*T) string
	mu    sync.Mutex
	m     map[*T]encodedObject
}

type encodedObject struct {
	rv, phase  string
	generation int64
	json       []byte
}

var (
	backupJSON = &objectJSON[api.Backup, *api.Backup]{what: "backup",
		phase: func(b *api.Backup) string { return string(b.Status.Phase) }, m: map[*api.Backup]encodedObject{}}
	restoreJSON = &objectJSON[api.Restore, *api.Restore]{what: "restore",
		phase: func(r *api.Restore) string { return string(r.Status.Phase) }, m: map[*api.Restore]encodedObject{}}
)

func (c *objectJSON[T, P]) encode(o *T) ([]byte, error) {
	if o == nil {
		return nil, nil
	}
	meta := P(o)
	version := encodedObject{rv: meta.GetResourceVersion(), phase: c.phase(o), generation: meta.GetGeneration()}
	c.mu.Lock()
	e, ok := c.m[o]
	c.mu.Unlock()
	if ok && e.rv == version.rv && e.generation == version.generation && e.phase == version.phase {
		return e.json, nil
	}
	sent := *o
	P(&sent).SetManagedFields(nil)
	data, err := json.Marshal(&sent)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s: %w", c.what, meta.GetName(), err)
	}
	version.json = data
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) > 64 {
		clear(c.m)
	}
	c.m[o] = version
	return data, nil
}

func decodeItem(plugin string, b []byte) (*unstructured.Unstructured, error) {
	if len(b) == 0 {
		return nil, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("plugin %s returned an item that is not valid JSON: %w", plugin, err)
	}
	return u, nil
}

type named struct{ name string }

func (n named) Name() string { return n.name }

// --- BackupItemAction ---

type biaClient struct {
	named
	c biav2.BackupItemActionClient
}

func (b biaClient) AppliesTo(ctx context.Context) (api.ResourceSelector, error) {
	resp, err := b.c.AppliesTo(withCall(ctx, b.name, ""), &biav2.BackupItemActionAppliesToRequest{Plugin: b.name})
	return wire.SelectorFromProto(resp.GetResourceSelector()), err
}

// Execute is ExecuteJSON for a caller holding a decoded item: the item goes
// over the wire as JSON either way.
func (b biaClient) Execute(ctx context.Context, item *unstructured.Unstructured, backup *api.Backup) (BackupResult, error) {
	it, err := encodeItem(item)
	if err != nil {
		return BackupResult{}, err
	}
	res, out, err := b.ExecuteJSON(ctx, it, describe(item), backup)
	if err != nil {
		return BackupResult{}, err
	}
	res.Item, err = decodeItem(b.name, out)
	return res, err
}

func (b biaClient) ExecuteJSON(ctx context.Context, item []byte, what string, backup *api.Backup) (BackupResult, []byte, error) {
	bk, err := backupJSON.encode(backup)
	if err != nil {
		return BackupResult{}, nil, err
	}
	resp, err := b.c.Execute(withCall(ctx, b.name, what), &biav2.ExecuteRequest{Plugin: b.name, Item: item, Backup: bk})
	if err != nil {
		return BackupResult{}, nil, err
	}
	return BackupResult{
		AdditionalItems:    wire.IDsFromProto(resp.GetAdditionalItems()),
		OperationID:        resp.GetOperationID(),
		PostOperationItems: wire.IDsFromProto(resp.GetPostOperationItems()),
	}, resp.GetItem(), nil
}

func (b biaClient) Progress(ctx context.Context, id string, backup *api.Backup) (api.OperationProgress, error) {
	bk, err := backupJSON.encode(backup)
	if err != nil {
		return api.OperationProgress{}, err
	}
	resp, err := b.c.Progress(withCall(ctx, b.name, operation(id)), &biav2.BackupItemActionProgressRequest{Plugin: b.name, OperationID: id, Backup: bk})
	return wire.ProgressFromProto(resp.GetProgress()), err
}

func (b biaClient) Cancel(ctx context.Context, id string, backup *api.Backup) error {
	bk, err := backupJSON.encode(backup)
	if err != nil {
		return err
	}
	_, err = b.c.Cancel(withCall(ctx, b.name, operation(id)), &biav2.BackupItemActionCancelRequest{Plugin: b.name, OperationID: id, Backup: bk})
	return err
}

// --- RestoreItemAction ---

type riaClient struct {
	named
	c riav2.RestoreItemActionClient
}

func (r riaClient) AppliesTo(ctx context.Context) (api.ResourceSelector, error) {
	resp, err := r.c.AppliesTo(withCall(ctx, r.name, ""), &riav2.RestoreItemActionAppliesToRequest{Plugin: r.name})
	return wire.SelectorFromProto(resp.GetResourceSelector()), err
}

func (r riaClient) Execute(ctx context.Context, in RestoreInput) (RestoreResult, error) {
	item, err := encodeItem(in.Item)
	if err != nil {
		return RestoreResult{}, err
	}
	fromBackup, err := encodeItem(in.ItemFromBackup)
	if err != nil {
		return RestoreResult{}, err
	}
	restore, err := restoreJSON.encode(in.Restore)
	if err != nil {
		return RestoreResult{}, err
	}
	resp, err := r.c.Execute(withCall(ctx, r.name, describe(in.Item)),
		&riav2.RestoreItemActionExecuteRequest{Plugin: r.name, Item: item, Restore: restore, ItemFromBackup: fromBackup})
	if err != nil {
		return RestoreResult{}, err
	}
	out, err := decodeItem(r.name, resp.GetItem())
	return RestoreResult{
		Item:                        out,
		AdditionalItems:             wire.IDsFromProto(resp.GetAdditionalItems()),
		SkipRestore:                 resp.GetSkipRestore(),
		OperationID:                 resp.GetOperationID(),
		WaitForAdditionalItems:      resp.GetWaitForAdditionalItems(),
		AdditionalItemsReadyTimeout: resp.GetAdditionalItemsReadyTimeout().AsDuration(),
	}, err
}

func (r riaClient) Progress(ctx context.Context, id string, restore *api.Restore) (api.OperationProgress, error) {
	rs, err := restoreJSON.encode(restore)
	if err != nil {
		return api.OperationProgress{}, err
	}
	resp, err := r.c.Progress(withCall(ctx, r.name, operation(id)), &riav2.RestoreItemActionProgressRequest{Plugin: r.name, OperationID: id, Restore: rs})
	return wire.ProgressFromProto(resp.GetProgress()), err
}

func (r riaClient) Cancel(ctx context.Context, id string, restore *api.Restore) error {
	rs, err := restoreJSON.encode(restore)
	if err != nil {
		return err
	}
	_, err = r.c.Cancel(withCall(ctx, r.name, operation(id)), &riav2.RestoreItemActionCancelRequest{Plugin: r.name, OperationID: id, Restore: rs})
	return err
}

func (r riaClient) AreAdditionalItemsReady(ctx context.Context, items []api.ResourceIdentifier, restore *api.Restore) (bool, error) {
	rs, err := restoreJSON.encode(restore)
	if err != nil {
		return false, err
	}
	resp, err := r.c.AreAdditionalItemsReady(withCall(ctx, r.name, fmt.Sprintf("%d additional items", len(items))),
		&riav2.RestoreItemActionItemsReadyRequest{Plugin: r.name, Restore: rs, AdditionalItems: wire.IDsToProto(items)})
	return resp.GetReady(), err
}

// --- DeleteItemAction ---

type diaClient struct {
	named
	c pb.DeleteItemActionClient
}

func (d diaClient) AppliesTo(ctx context.Context) (api.ResourceSelector, error) {
	resp, err := d.c.AppliesTo(withCall(ctx, d.name, ""), &pb.DeleteItemActionAppliesToRequest{Plugin: d.name})
	return wire.SelectorFromProto(resp.GetResourceSelector()), err
}

func (d diaClient) Execute(ctx context.Context, item *unstructured.Unstructured, backup *api.Backup) error {
	it, err := encodeItem(item)
	if err != nil {
		return err
	}
	bk, err := backupJSON.encode(backup)
	if err != nil {
		return err
	}
	_, err = d.c.Execute(withCall(ctx, d.name, describe(item)), &pb.DeleteItemActionExecuteRequest{Plugin: d.name, Item: it, Backup: bk})
	return err
}

// --- ObjectStore ---

type objectStoreClient struct {
	named
	c pb.ObjectStoreClient
}

func (o objectStoreClient) init(ctx context.Context, config map[string]string) error {
	_, err := o.c.Init(withCall(ctx, o.name, ""), &pb.ObjectStoreInitRequest{Plugin: o.name, Config: config})
	return err
}

func object(bucket, key string) string { return "object " + bucket + "/" + key }

// PutObject cancels the stream when body fails part-way: the plugin sees
// an aborted upload, never the end of a shorter object, which over an
// object already there would lose it.
func (o objectStoreClient) PutObject(ctx context.Context, bucket, key string, body io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := o.c.PutObject(withCall(ctx, o.name, object(bucket, key)))
	if err != nil {
		return err
	}
	// The first message names the object: it goes with the first chunk,
	// or alone for an empty body.
	req := &pb.PutObjectRequest{Plugin: o.name, Bucket: bucket, Key: key}
	readErr, sendErr := wire.SendChunks(body, func(b []byte) error {
		req.Body = b
		err := stream.Send(req)
		req = &pb.PutObjectRequest{}
		return err
	})
	if readErr == nil && sendErr == nil && req.Plugin != "" {
		sendErr = stream.Send(req)
	}
	if readErr != nil {
		// Cancel only: closing the send side as well would race the
		// cancellation, and the plugin could see the end of the body
		// before the abort, and store what it had.
		cancel()
		return fmt.Errorf("reading the body of %s: %w", object(bucket, key), readErr)
	}
	if sendErr != nil && sendErr != io.EOF {
		return sendErr
	}
	// An io.EOF from Send is the plugin ending the stream early:
	// CloseAndRecv says why.
	_, err = stream.CloseAndRecv()
	return err
}

func (o objectStoreClient) ObjectExists(ctx context.Context, bucket, key string) (bool, error) {
	resp, err := o.c.ObjectExists(withCall(ctx, o.name, object(bucket, key)), &pb.ObjectExistsRequest{Plugin: o.name, Bucket: bucket, Key: key})
	return resp.GetExists(), err
}

// objectReader reads a GetObject stream. Its context lives until Close.
type objectReader struct {
	*wire.ChunkReader
	cancel context.CancelFunc
}

func (r objectReader) Close() error {
	r.cancel()
	return nil
}

func (o objectStoreClient) GetObject(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	ctx, cancel := context.WithCancel(ctx)
	stream, err := o.c.GetObject(withCall(ctx, o.name, object(bucket, key)), &pb.GetObjectRequest{Plugin: o.name, Bucket: bucket, Key: key})
	if err != nil {
		cancel()
		return nil, err
	}
	// Read the first chunk now so a missing object fails here, not on Read.
	first, err := stream.Recv()
	if err != nil && err != io.EOF {
		cancel()
		return nil, err
	}
	recv := func() ([]byte, error) {
		chunk, err := stream.Recv()
		return chunk.GetData(), err
	}
	if err == io.EOF {
		recv = func() ([]byte, error) { return nil, io.EOF }
	}
	return objectReader{wire.NewChunkReader(first.GetData(), recv), cancel}, nil
}

func (o objectStoreClient) ListCommonPrefixes(ctx context.Context, bucket, prefix, delimiter string) ([]string, error) {
	resp, err := o.c.ListCommonPrefixes(withCall(ctx, o.name, "bucket "+bucket+" prefix "+prefix),
		&pb.ListCommonPrefixesRequest{Plugin: o.name, Bucket: bucket, Prefix: prefix, Delimiter: delimiter})
	return resp.GetPrefixes(), err
}

func (o objectStoreClient) ListObjects(ctx context.Context, bucket, prefix string) ([]string, error) {
	resp, err := o.c.ListObjects(withCall(ctx, o.name, "bucket "+bucket+" prefix "+prefix),
		&pb.ListObjectsRequest{Plugin: o.name, Bucket: bucket, Prefix: prefix})
	return resp.GetKeys(), err
}

func (o objectStoreClient) DeleteObject(ctx context.Context, bucket, key string) error {
	_, err := o.c.DeleteObject(withCall(ctx, o.name, object(bucket, key)), &pb.DeleteObjectRequest{Plugin: o.name, Bucket: bucket, Key: key})
	return err
}

func (o objectStoreClient) CreateSignedURL(ctx context.Context, bucket, key string, ttl time.Duration) (string, error) {
	resp, err := o.c.CreateSignedURL(withCall(ctx, o.name, object(bucket, key)),
		&pb.CreateSignedURLRequest{Plugin: o.name, Bucket: bucket, Key: key, Ttl: int64(ttl)})
	return resp.GetUrl(), err
}

// --- VolumeSnapshotter ---

type snapshotterClient struct {
	named
	c vsv2.VolumeSnapshotterClient
}

func (s snapshotterClient) init(ctx context.Context, config map[string]string) error {
	_, err := s.c.Init(withCall(ctx, s.name, ""), &pb.VolumeSnapshotterInitRequest{Plugin: s.name, Config: config})
	return err
}

func (s snapshotterClient) CreateVolumeFromSnapshot(ctx context.Context, snapshotID, volumeType, volumeAZ string, iops *int64) (string, error) {
	req := &pb.CreateVolumeRequest{Plugin: s.name, SnapshotID: snapshotID, VolumeType: volumeType, VolumeAZ: volumeAZ}
	if iops != nil {
		req.Iops = *iops
	}
	resp, err := s.c.CreateVolumeFromSnapshot(withCall(ctx, s.name, "snapshot "+snapshotID), req)
	return resp.GetVolumeID(), err
}

func (s snapshotterClient) GetVolumeInfo(ctx context.Context, volumeID, volumeAZ string) (string, *int64, error) {
	resp, err := s.c.GetVolumeInfo(withCall(ctx, s.name, "volume "+volumeID), &pb.GetVolumeInfoRequest{Plugin: s.name, VolumeID: volumeID, VolumeAZ: volumeAZ})
	if err != nil {
		return "", nil, err
	}
	var iops *int64
	if resp.GetIops() != 0 {
		v := resp.GetIops()
		iops = &v
	}
	return resp.GetVolumeType(), iops, nil
}

func (s snapshotterClient) CreateSnapshot(ctx context.Context, volumeID, volumeAZ string, tags map[string]string) (string, error) {
	resp, err := s.c.CreateSnapshot(withCall(ctx, s.name, "volume "+volumeID), &pb.CreateSnapshotRequest{Plugin: s.name, VolumeID: volumeID, VolumeAZ: volumeAZ, Tags: tags})
	return resp.GetSnapshotID(), err
}

func (s snapshotterClient) DeleteSnapshot(ctx context.Context, snapshotID string) error {
	_, err := s.c.DeleteSnapshot(withCall(ctx, s.name, "snapshot "+snapshotID), &pb.DeleteSnapshotRequest{Plugin: s.name, SnapshotID: snapshotID})
	return err
}

func (s snapshotterClient) GetVolumeID(ctx context.Context, pv *unstructured.Unstructured) (string, error) {
	b, err := encodeItem(pv)
	if err != nil {
		return "", err
	}
	resp, err := s.c.GetVolumeID(withCall(ctx, s.name, describe(pv)), &pb.GetVolumeIDRequest{Plugin: s.name, PersistentVolume: b})
	return resp.GetVolumeID(), err
}

func (s snapshotterClient) SetVolumeID(ctx context.Context, pv *unstructured.Unstructured, volumeID string) (*unstructured.Unstructured, error) {
	b, err := encodeItem(pv)
	if err != nil {
		return nil, err
	}
	resp, err := s.c.SetVolumeID(withCall(ctx, s.name, describe(pv)), &pb.SetVolumeIDRequest{Plugin: s.name, PersistentVolume: b, VolumeID: volumeID})
	if err != nil {
		return nil, err
	}
	return decodeItem(s.name, resp.GetPersistentVolume())
}

func (s snapshotterClient) Progress(ctx context.Context, id string) (api.OperationProgress, error) {
	resp, err := s.c.Progress(withCall(ctx, s.name, operation(id)), &vsv2.VolumeSnapshotterProgressRequest{Plugin: s.name, SnapshotID: id})
	return wire.ProgressFromProto(resp.GetProgress()), err
}

func (s snapshotterClient) Cancel(ctx context.Context, id string) error {
	_, err := s.c.Cancel(withCall(ctx, s.name, operation(id)), &vsv2.VolumeSnapshotterCancelRequest{Plugin: s.name, OperationID: id})
	return err
}
