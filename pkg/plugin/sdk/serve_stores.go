package sdk

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/salvor-dev/salvor/pkg/plugin/kind"
	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
	vsv2 "github.com/salvor-dev/salvor/pkg/plugin/proto/volumesnapshotter/v2"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

type objectStoreServer struct{ r *registry[storeCalls] }

func registerObjectStore(r *registry[storeCalls], g *grpc.Server) {
	pb.RegisterObjectStoreServer(g, objectStoreServer{r})
}

func (s objectStoreServer) Init(_ context.Context, req *pb.ObjectStoreInitRequest) (*pb.Empty, error) {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, impl.Init(req.GetConfig())
}

func (s objectStoreServer) PutObject(stream grpc.ClientStreamingServer[pb.PutObjectRequest, pb.Empty]) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	impl, err := s.r.get(first.GetPlugin())
	if err != nil {
		return err
	}
	if err := impl.put(stream.Context(), first.GetBucket(), first.GetKey(), wire.NewChunkReader(first.GetBody(), func() ([]byte, error) {
		req, err := stream.Recv()
		return req.GetBody(), err
	})); err != nil {
		return err
	}
	return stream.SendAndClose(&pb.Empty{})
}

func (s objectStoreServer) ObjectExists(ctx context.Context, req *pb.ObjectExistsRequest) (*pb.ObjectExistsResponse, error) {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	exists, err := impl.exists(ctx, req.GetBucket(), req.GetKey())
	return &pb.ObjectExistsResponse{Exists: exists}, err
}

func (s objectStoreServer) GetObject(req *pb.GetObjectRequest, stream grpc.ServerStreamingServer[pb.Bytes]) error {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return err
	}
	rc, err := impl.get(stream.Context(), req.GetBucket(), req.GetKey())
	if err != nil {
		return err
	}
	defer rc.Close()
	readErr, sendErr := wire.SendChunks(rc, func(b []byte) error { return stream.Send(&pb.Bytes{Data: b}) })
	return errors.Join(readErr, sendErr)
}

func (s objectStoreServer) ListCommonPrefixes(ctx context.Context, req *pb.ListCommonPrefixesRequest) (*pb.ListCommonPrefixesResponse, error) {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	prefixes, err := impl.prefixes(ctx, req.GetBucket(), req.GetPrefix(), req.GetDelimiter())
	return &pb.ListCommonPrefixesResponse{Prefixes: prefixes}, err
}

func (s objectStoreServer) ListObjects(ctx context.Context, req *pb.ListObjectsRequest) (*pb.ListObjectsResponse, error) {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	keys, err := impl.list(ctx, req.GetBucket(), req.GetPrefix())
	return &pb.ListObjectsResponse{Keys: keys}, err
}

func (s objectStoreServer) DeleteObject(ctx context.Context, req *pb.DeleteObjectRequest) (*pb.Empty, error) {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, impl.delete(ctx, req.GetBucket(), req.GetKey())
}

func (s objectStoreServer) CreateSignedURL(_ context.Context, req *pb.CreateSignedURLRequest) (*pb.CreateSignedURLResponse, error) {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	url, err := impl.CreateSignedURL(req.GetBucket(), req.GetKey(), time.Duration(req.GetTtl()))
	return &pb.CreateSignedURLResponse{Url: url}, err
}

// snapshotter serves both snapshotter versions: get finds the
// implementation of a name.
type snapshotter struct {
	get func(name string) (snapshotterCalls, error)
}

func (s snapshotter) Init(_ context.Context, req *pb.VolumeSnapshotterInitRequest) (*pb.Empty, error) {
	impl, err := s.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, impl.Init(req.GetConfig())
}

func (s snapshotter) CreateVolumeFromSnapshot(ctx context.Context, req *pb.CreateVolumeRequest) (*pb.CreateVolumeResponse, error) {
	impl, err := s.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	var iops *int64
	if req.GetIops() != 0 {
		v := req.GetIops()
		iops = &v
	}
	id, err := impl.createVolume(ctx, req.GetSnapshotID(), req.GetVolumeType(), req.GetVolumeAZ(), iops)
	return &pb.CreateVolumeResponse{VolumeID: id}, err
}

func (s snapshotter) GetVolumeInfo(ctx context.Context, req *pb.GetVolumeInfoRequest) (*pb.GetVolumeInfoResponse, error) {
	impl, err := s.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	volumeType, iops, err := impl.volumeInfo(ctx, req.GetVolumeID(), req.GetVolumeAZ())
	resp := &pb.GetVolumeInfoResponse{VolumeType: volumeType}
	if iops != nil {
		resp.Iops = *iops
	}
	return resp, err
}

func (s snapshotter) CreateSnapshot(ctx context.Context, req *pb.CreateSnapshotRequest) (*pb.CreateSnapshotResponse, error) {
	impl, err := s.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	id, err := impl.createSnapshot(ctx, req.GetVolumeID(), req.GetVolumeAZ(), req.GetTags())
	return &pb.CreateSnapshotResponse{SnapshotID: id}, err
}

func (s snapshotter) DeleteSnapshot(ctx context.Context, req *pb.DeleteSnapshotRequest) (*pb.Empty, error) {
	impl, err := s.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, impl.deleteSnapshot(ctx, req.GetSnapshotID())
}

// volumeCall starts GetVolumeID and SetVolumeID: the implementation and
// the persistent volume sent.
func (s snapshotter) volumeCall(plugin string, pv []byte) (snapshotterCalls, runtime.Unstructured, error) {
	impl, err := s.get(plugin)
	if err != nil {
		return impl, nil, err
	}
	u, err := decodeItem(pv, "persistentVolume")
	return impl, asUnstructured(u), err
}

func (s snapshotter) GetVolumeID(_ context.Context, req *pb.GetVolumeIDRequest) (*pb.GetVolumeIDResponse, error) {
	impl, pv, err := s.volumeCall(req.GetPlugin(), req.GetPersistentVolume())
	if err != nil {
		return nil, err
	}
	id, err := impl.GetVolumeID(pv)
	return &pb.GetVolumeIDResponse{VolumeID: id}, err
}

func (s snapshotter) SetVolumeID(_ context.Context, req *pb.SetVolumeIDRequest) (*pb.SetVolumeIDResponse, error) {
	impl, pv, err := s.volumeCall(req.GetPlugin(), req.GetPersistentVolume())
	if err != nil {
		return nil, err
	}
	updated, err := impl.SetVolumeID(pv, req.GetVolumeID())
	if err != nil {
		return nil, err
	}
	b, err := encodeItem(updated, req.GetPersistentVolume())
	return &pb.SetVolumeIDResponse{PersistentVolume: b}, err
}

// registerVSv1 is a no-op: the v1 snapshotter service is registered once by
// registerSnapshotterV1Service, for v1 and v2 snapshotters alike.
func registerVSv1(*registry[snapshotterCalls], *grpc.Server) {}

// registerSnapshotterV1Service serves the v1 snapshotter service for every
// snapshotter, v1 or v2: a Velero host knows only v1 and calls a v2
// snapshotter through it.
func registerSnapshotterV1Service(s *Server, g *grpc.Server) {
	v1, hasV1 := s.kinds[kind.VolumeSnapshotter].(*kindServer[snapshotterCalls])
	v2, hasV2 := s.kinds[kind.VolumeSnapshotterV2].(*kindServer[snapshotterCalls])
	if !hasV1 && !hasV2 {
		return
	}
	serveAs(g, &vsv2.VolumeSnapshotter_ServiceDesc, kind.VolumeSnapshotter, snapshotter{get: func(name string) (snapshotterCalls, error) {
		if hasV1 {
			if _, ok := v1.r.factories[name]; ok || !hasV2 {
				return v1.r.get(name)
			}
		}
		return v2.r.get(name)
	}})
}

func registerVSv2(r *registry[snapshotterCalls], g *grpc.Server) {
	vsv2.RegisterVolumeSnapshotterServer(g, snapshotter{get: r.get})
}

func (s snapshotter) Progress(ctx context.Context, req *vsv2.VolumeSnapshotterProgressRequest) (*vsv2.VolumeSnapshotterProgressResponse, error) {
	impl, err := s.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	p, err := impl.progress(ctx, req.GetSnapshotID())
	return &vsv2.VolumeSnapshotterProgressResponse{Progress: wire.ProgressToProto(p)}, err
}

func (s snapshotter) Cancel(ctx context.Context, req *vsv2.VolumeSnapshotterCancelRequest) (*emptypb.Empty, error) {
	impl, err := s.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, impl.cancel(ctx, req.GetOperationID())
}

type listerServer struct{ s *Server }

func registerLister(s *Server, g *grpc.Server) {
	pb.RegisterPluginListerServer(g, listerServer{s})
}

// ListPlugins lists everything to a Salvor host. A Velero host rejects kinds
// it does not know, so it is told about a VolumeSnapshotterV2 as the
// VolumeSnapshotter (v1) it can call.
func (l listerServer) ListPlugins(ctx context.Context, _ *pb.Empty) (*pb.ListPluginsResponse, error) {
	salvorHost := wire.IsSalvorHost(ctx)
	resp := &pb.ListPluginsResponse{}
	seen := map[string]bool{}
	for _, id := range l.s.Plugins() {
		k := id.Kind
		if !salvorHost && k == kind.VolumeSnapshotterV2 {
			k = kind.VolumeSnapshotter
		}
		if key := string(k) + "/" + id.Name; !seen[key] {
			seen[key] = true
			resp.Plugins = append(resp.Plugins, &pb.PluginIdentifier{Command: id.Command, Kind: string(k), Name: id.Name})
		}
	}
	return resp, nil
}
