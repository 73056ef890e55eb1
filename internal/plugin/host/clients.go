package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
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

type biaV1Client struct {
	named
	c pb.BackupItemActionClient
}

func (b biaV1Client) AppliesTo(ctx context.Context) (api.ResourceSelector, error) {
	resp, err := b.c.AppliesTo(withCall(ctx, b.name, ""), &pb.BackupItemActionAppliesToRequest{Plugin: b.name})
	return wire.SelectorFromProto(resp.GetResourceSelector()), err
}

func (b biaV1Client) Execute(ctx context.Context, item *unstructured.Unstructured, backup *api.Backup) (BackupResult, error) {
	return executeObject(ctx, b, item, backup)
}

func (b biaV1Client) ExecuteJSON(ctx context.Context, item []byte, what string, backup *api.Backup) (BackupResult, []byte, error) {
	_, res, out, err := sendBackupItem(ctx, b.name, what, backup, func(ctx context.Context, bk []byte) (*pb.ExecuteResponse, error) {
		return b.c.Execute(ctx, &pb.ExecuteRequest{Plugin: b.name, Item: item, Backup: bk})
	})
	return res, out, err
}

// itemAnswer is what every version of an item action's Execute answers.
type itemAnswer interface {
	GetItem() []byte
	GetAdditionalItems() []*pb.ResourceIdentifier
}

// sendBackupItem is the part of Execute every BackupItemAction version
// shares: send (the item with the Backup's JSON) and read what all answer.
func sendBackupItem[R itemAnswer](ctx context.Context, name, what string, backup *api.Backup, send func(context.Context, []byte) (R, error)) (R, BackupResult, []byte, error) {
	var resp R
	bk, err := backupJSON.encode(backup)
	if err == nil {
		resp, err = send(withCall(ctx, name, what), bk)
	}
	if err != nil {
		return resp, BackupResult{}, nil, err
	}
	return resp, BackupResult{AdditionalItems: wire.IDsFromProto(resp.GetAdditionalItems())}, resp.GetItem(), nil
}

// executeObject is Execute for a caller holding a decoded item: the item
// goes over the wire as JSON either way.
func executeObject(ctx context.Context, a interface {
	Name() string
	ExecuteJSON(context.Context, []byte, string, *api.Backup) (BackupResult, []byte, error)
}, item *unstructured.Unstructured, backup *api.Backup) (BackupResult, error) {
	it, err := encodeItem(item)
	if err != nil {
		return BackupResult{}, err
	}
	res, out, err := a.ExecuteJSON(ctx, it, describe(item), backup)
	if err != nil {
		return BackupResult{}, err
	}
	res.Item, err = decodeItem(a.Name(), out)
	return res, err
}

type biaV2Client struct {
	named
	c biav2.BackupItemActionClient
}

func (b biaV2Client) AppliesTo(ctx context.Context) (api.ResourceSelector, error) {
	resp, err := b.c.AppliesTo(withCall(ctx, b.name, ""), &biav2.BackupItemActionAppliesToRequest{Plugin: b.name})
	return wire.SelectorFromProto(resp.GetResourceSelector()), err
}

func (b biaV2Client) Execute(ctx context.Context, item *unstructured.Unstructured, backup *api.Backup) (BackupResult, error) {
	return executeObject(ctx, b, item, backup)
}

func (b biaV2Client) ExecuteJSON(ctx context.Context, item []byte, what string, backup *api.Backup) (BackupResult, []byte, error) {
	resp, res, out, err := sendBackupItem(ctx, b.name, what, backup, func(ctx context.Context, bk []byte) (*biav2.ExecuteResponse, error) {
		return b.c.Execute(ctx, &biav2.ExecuteRequest{Plugin: b.name, Item: item, Backup: bk})
	})
	res.OperationID, res.PostOperationItems = resp.GetOperationID(), wire.IDsFromProto(resp.GetPostOperationItems())
	return res, out, err
}

func (b biaV2Client) Progress(ctx context.Context, id string, backup *api.Backup) (api.OperationProgress, error) {
	bk, err := backupJSON.encode(backup)
	if err != nil {
		return api.OperationProgress{}, err
	}
	resp, err := b.c.Progress(withCall(ctx, b.name, operation(id)), &biav2.BackupItemActionProgressRequest{Plugin: b.name, OperationID: id, Backup: bk})
	return wire.ProgressFromProto(resp.GetProgress()), err
}

func (b biaV2Client) Cancel(ctx context.Context, id string, backup *api.Backup) error {
	bk, err := backupJSON.encode(backup)
	if err != nil {
		return err
	}
	_, err = b.c.Cancel(withCall(ctx, b.name, operation(id)), &biav2.BackupItemActionCancelRequest{Plugin: b.name, OperationID: id, Backup: bk})
	return err
}

// --- RestoreItemAction ---

// sendRestoreItem is the part of Execute every RestoreItemAction version
// shares: encode the item, the item as backed up and the Restore, send,
// and read what all versions answer.
func sendRestoreItem[R interface {
	itemAnswer
	GetSkipRestore() bool
}](ctx context.Context, name string, in RestoreInput, send func(ctx context.Context, item, restore, fromBackup []byte) (R, error)) (R, RestoreResult, error) {
	var resp R
	item, err := encodeItem(in.Item)
	if err != nil {
		return resp, RestoreResult{}, err
	}
	fromBackup, err := encodeItem(in.ItemFromBackup)
	if err != nil {
		return resp, RestoreResult{}, err
	}
	restore, err := restoreJSON.encode(in.Restore)
	if err != nil {
		return resp, RestoreResult{}, err
	}
	if resp, err = send(withCall(ctx, name, describe(in.Item)), item, restore, fromBackup); err != nil {
		return resp, RestoreResult{}, err
	}
	out, err := decodeItem(name, resp.GetItem())
	return resp, RestoreResult{Item: out, AdditionalItems: wire.IDsFromProto(resp.GetAdditionalItems()), SkipRestore: resp.GetSkipRestore()}, err
}

type riaV1Client struct {
	named
	c pb.RestoreItemActionClient
}

func (r riaV1Client) AppliesTo(ctx context.Context) (api.ResourceSelector, error) {
	resp, err := r.c.AppliesTo(withCall(ctx, r.name, ""), &pb.RestoreItemActionAppliesToRequest{Plugin: r.name})
	return wire.SelectorFromProto(resp.GetResourceSelector()), err
}

func (r riaV1Client) Execute(ctx context.Context, in RestoreInput) (RestoreResult, error) {
	_, res, err := sendRestoreItem(ctx, r.name, in, func(ctx context.Context, item, restore, fromBackup []byte) (*pb.RestoreItemActionExecuteResponse, error) {
		return r.c.Execute(ctx, &pb.RestoreItemActionExecuteRequest{Plugin: r.name, Item: item, Restore: restore, ItemFromBackup: fromBackup})
	})
	return res, err
}

type riaV2Client struct {
	named
	c riav2.RestoreItemActionClient
}

func (r riaV2Client) AppliesTo(ctx context.Context) (api.ResourceSelector, error) {
	resp, err := r.c.AppliesTo(withCall(ctx, r.name, ""), &riav2.RestoreItemActionAppliesToRequest{Plugin: r.name})
	return wire.SelectorFromProto(resp.GetResourceSelector()), err
}

func (r riaV2Client) Execute(ctx context.Context, in RestoreInput) (RestoreResult, error) {
	resp, res, err := sendRestoreItem(ctx, r.name, in, func(ctx context.Context, item, restore, fromBackup []byte) (*riav2.RestoreItemActionExecuteResponse, error) {
		return r.c.Execute(ctx, &riav2.RestoreItemActionExecuteRequest{Plugin: r.name, Item: item, Restore: restore, ItemFromBackup: fromBackup})
	})
	res.OperationID, res.WaitForAdditionalItems = resp.GetOperationID(), resp.GetWaitForAdditionalItems()
	res.AdditionalItemsReadyTimeout = resp.GetAdditionalItemsReadyTimeout().AsDuration()
	return res, err
}

func (r riaV2Client) Progress(ctx context.Context, id string, restore *api.Restore) (api.OperationProgress, error) {
	rs, err := restoreJSON.encode(restore)
	if err != nil {
		return api.OperationProgress{}, err
	}
	resp, err := r.c.Progress(withCall(ctx, r.name, operation(id)), &riav2.RestoreItemActionProgressRequest{Plugin: r.name, OperationID: id, Restore: rs})
	return wire.ProgressFromProto(resp.GetProgress()), err
}

func (r riaV2Client) Cancel(ctx context.Context, id string, restore *api.Restore) error {
	rs, err := restoreJSON.encode(restore)
	if err != nil {
		return err
	}
	_, err = r.c.Cancel(withCall(ctx, r.name, operation(id)), &riav2.RestoreItemActionCancelRequest{Plugin: r.name, OperationID: id, Restore: rs})
	return err
}

func (r riaV2Client) AreAdditionalItemsReady(ctx context.Context, items []api.ResourceIdentifier, restore *api.Restore) (bool, error) {
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

func (o objectStoreClient) PutObject(ctx context.Context, bucket, key string, body io.Reader) error {
	stream, err := o.c.PutObject(withCall(ctx, o.name, object(bucket, key)))
	if err != nil {
		return err
	}
	buf := make([]byte, wire.ChunkSize)
	first := true
	for {
		n, rerr := io.ReadFull(body, buf)
		if n > 0 || first {
			req := &pb.PutObjectRequest{Body: append([]byte(nil), buf[:n]...)}
			if first {
				req.Plugin, req.Bucket, req.Key = o.name, bucket, key
				first = false
			}
			if err := stream.Send(req); err != nil {
				if err == io.EOF {
					// The plugin ended the stream early; CloseAndRecv says why.
					break
				}
				return err
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			_ = stream.CloseSend()
			return fmt.Errorf("reading the body of %s: %w", object(bucket, key), rerr)
		}
	}
	_, err = stream.CloseAndRecv()
	return err
}

func (o objectStoreClient) ObjectExists(ctx context.Context, bucket, key string) (bool, error) {
	resp, err := o.c.ObjectExists(withCall(ctx, o.name, object(bucket, key)), &pb.ObjectExistsRequest{Plugin: o.name, Bucket: bucket, Key: key})
	return resp.GetExists(), err
}

// objectReader reads a GetObject stream. Its context lives until Close.
type objectReader struct {
	recv   func() (*pb.Bytes, error)
	cancel context.CancelFunc
	buf    []byte
	err    error
}

func (r *objectReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		chunk, err := r.recv()
		if err != nil {
			r.err = err
			continue
		}
		r.buf = chunk.GetData()
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *objectReader) Close() error {
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
	r := &objectReader{recv: stream.Recv, cancel: cancel, buf: first.GetData()}
	if err == io.EOF {
		r.err = io.EOF
	}
	return r, nil
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

// snapshotterStub is the v1 method set of both generated snapshotter
// clients, so the v1 methods are written once for both versions.
type snapshotterStub interface {
	Init(ctx context.Context, in *pb.VolumeSnapshotterInitRequest, opts ...grpc.CallOption) (*pb.Empty, error)
	CreateVolumeFromSnapshot(ctx context.Context, in *pb.CreateVolumeRequest, opts ...grpc.CallOption) (*pb.CreateVolumeResponse, error)
	GetVolumeInfo(ctx context.Context, in *pb.GetVolumeInfoRequest, opts ...grpc.CallOption) (*pb.GetVolumeInfoResponse, error)
	CreateSnapshot(ctx context.Context, in *pb.CreateSnapshotRequest, opts ...grpc.CallOption) (*pb.CreateSnapshotResponse, error)
	DeleteSnapshot(ctx context.Context, in *pb.DeleteSnapshotRequest, opts ...grpc.CallOption) (*pb.Empty, error)
	GetVolumeID(ctx context.Context, in *pb.GetVolumeIDRequest, opts ...grpc.CallOption) (*pb.GetVolumeIDResponse, error)
	SetVolumeID(ctx context.Context, in *pb.SetVolumeIDRequest, opts ...grpc.CallOption) (*pb.SetVolumeIDResponse, error)
}

type snapshotterClient[S snapshotterStub] struct {
	named
	c S
}

func (s snapshotterClient[S]) init(ctx context.Context, config map[string]string) error {
	_, err := s.c.Init(withCall(ctx, s.name, ""), &pb.VolumeSnapshotterInitRequest{Plugin: s.name, Config: config})
	return err
}

func (s snapshotterClient[S]) CreateVolumeFromSnapshot(ctx context.Context, snapshotID, volumeType, volumeAZ string, iops *int64) (string, error) {
	req := &pb.CreateVolumeRequest{Plugin: s.name, SnapshotID: snapshotID, VolumeType: volumeType, VolumeAZ: volumeAZ}
	if iops != nil {
		req.Iops = *iops
	}
	resp, err := s.c.CreateVolumeFromSnapshot(withCall(ctx, s.name, "snapshot "+snapshotID), req)
	return resp.GetVolumeID(), err
}

func (s snapshotterClient[S]) GetVolumeInfo(ctx context.Context, volumeID, volumeAZ string) (string, *int64, error) {
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

func (s snapshotterClient[S]) CreateSnapshot(ctx context.Context, volumeID, volumeAZ string, tags map[string]string) (string, error) {
	resp, err := s.c.CreateSnapshot(withCall(ctx, s.name, "volume "+volumeID), &pb.CreateSnapshotRequest{Plugin: s.name, VolumeID: volumeID, VolumeAZ: volumeAZ, Tags: tags})
	return resp.GetSnapshotID(), err
}

func (s snapshotterClient[S]) DeleteSnapshot(ctx context.Context, snapshotID string) error {
	_, err := s.c.DeleteSnapshot(withCall(ctx, s.name, "snapshot "+snapshotID), &pb.DeleteSnapshotRequest{Plugin: s.name, SnapshotID: snapshotID})
	return err
}

func (s snapshotterClient[S]) GetVolumeID(ctx context.Context, pv *unstructured.Unstructured) (string, error) {
	b, err := encodeItem(pv)
	if err != nil {
		return "", err
	}
	resp, err := s.c.GetVolumeID(withCall(ctx, s.name, describe(pv)), &pb.GetVolumeIDRequest{Plugin: s.name, PersistentVolume: b})
	return resp.GetVolumeID(), err
}

func (s snapshotterClient[S]) SetVolumeID(ctx context.Context, pv *unstructured.Unstructured, volumeID string) (*unstructured.Unstructured, error) {
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

type vsV2Client struct {
	snapshotterClient[vsv2.VolumeSnapshotterClient]
}

func (s vsV2Client) Progress(ctx context.Context, id string) (api.OperationProgress, error) {
	resp, err := s.c.Progress(withCall(ctx, s.name, operation(id)), &vsv2.VolumeSnapshotterProgressRequest{Plugin: s.name, SnapshotID: id})
	return wire.ProgressFromProto(resp.GetProgress()), err
}

func (s vsV2Client) Cancel(ctx context.Context, id string) error {
	_, err := s.c.Cancel(withCall(ctx, s.name, operation(id)), &vsv2.VolumeSnapshotterCancelRequest{Plugin: s.name, OperationID: id})
	return err
}
