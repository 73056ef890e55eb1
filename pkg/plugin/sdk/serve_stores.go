package sdk

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/salvor-dev/salvor/pkg/plugin/kind"
	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
	vsv2 "github.com/salvor-dev/salvor/pkg/plugin/proto/volumesnapshotter/v2"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

type objectStoreServer struct{ r *registry[ObjectStore] }

func registerObjectStore(r *registry[ObjectStore], g *grpc.Server) {
	pb.RegisterObjectStoreServer(g, objectStoreServer{r})
}

func (s objectStoreServer) Init(_ context.Context, req *pb.ObjectStoreInitRequest) (*pb.Empty, error) {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	if err := impl.Init(req.GetConfig()); err != nil {
		return nil, err
	}
	return &pb.Empty{}, nil
}

// putReader turns the body chunks of a PutObject stream into a reader.
type putReader struct {
	stream grpc.ClientStreamingServer[pb.PutObjectRequest, pb.Empty]
	buf    []byte
}

func (r *putReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		req, err := r.stream.Recv()
		if err != nil {
			return 0, err
		}
		r.buf = req.GetBody()
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
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
	body := &putReader{stream: stream, buf: first.GetBody()}
	bucket, key := first.GetBucket(), first.GetKey()
	if c, ok := impl.(interface {
		PutObjectWithContext(context.Context, string, string, io.Reader) error
	}); ok {
		err = c.PutObjectWithContext(stream.Context(), bucket, key, body)
	} else {
		err = impl.PutObject(bucket, key, body)
	}
	if err != nil {
		return err
	}
	return stream.SendAndClose(&pb.Empty{})
}

func (s objectStoreServer) ObjectExists(ctx context.Context, req *pb.ObjectExistsRequest) (*pb.ObjectExistsResponse, error) {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	var exists bool
	if c, ok := impl.(interface {
		ObjectExistsWithContext(context.Context, string, string) (bool, error)
	}); ok {
		exists, err = c.ObjectExistsWithContext(ctx, req.GetBucket(), req.GetKey())
	} else {
		exists, err = impl.ObjectExists(req.GetBucket(), req.GetKey())
	}
	if err != nil {
		return nil, err
	}
	return &pb.ObjectExistsResponse{Exists: exists}, nil
}

func (s objectStoreServer) GetObject(req *pb.GetObjectRequest, stream grpc.ServerStreamingServer[pb.Bytes]) error {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return err
	}
	var rc io.ReadCloser
	if c, ok := impl.(interface {
		GetObjectWithContext(context.Context, string, string) (io.ReadCloser, error)
	}); ok {
		rc, err = c.GetObjectWithContext(stream.Context(), req.GetBucket(), req.GetKey())
	} else {
		rc, err = impl.GetObject(req.GetBucket(), req.GetKey())
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	buf := make([]byte, wire.ChunkSize)
	for {
		n, err := io.ReadFull(rc, buf)
		if n > 0 {
			if serr := stream.Send(&pb.Bytes{Data: buf[:n]}); serr != nil {
				return serr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (s objectStoreServer) ListCommonPrefixes(ctx context.Context, req *pb.ListCommonPrefixesRequest) (*pb.ListCommonPrefixesResponse, error) {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	var prefixes []string
	if c, ok := impl.(interface {
		ListCommonPrefixesWithContext(context.Context, string, string, string) ([]string, error)
	}); ok {
		prefixes, err = c.ListCommonPrefixesWithContext(ctx, req.GetBucket(), req.GetPrefix(), req.GetDelimiter())
	} else {
		prefixes, err = impl.ListCommonPrefixes(req.GetBucket(), req.GetPrefix(), req.GetDelimiter())
	}
	if err != nil {
		return nil, err
	}
	return &pb.ListCommonPrefixesResponse{Prefixes: prefixes}, nil
}

func (s objectStoreServer) ListObjects(ctx context.Context, req *pb.ListObjectsRequest) (*pb.ListObjectsResponse, error) {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	var keys []string
	if c, ok := impl.(interface {
		ListObjectsWithContext(context.Context, string, string) ([]string, error)
	}); ok {
		keys, err = c.ListObjectsWithContext(ctx, req.GetBucket(), req.GetPrefix())
	} else {
		keys, err = impl.ListObjects(req.GetBucket(), req.GetPrefix())
	}
	if err != nil {
		return nil, err
	}
	return &pb.ListObjectsResponse{Keys: keys}, nil
}

func (s objectStoreServer) DeleteObject(ctx context.Context, req *pb.DeleteObjectRequest) (*pb.Empty, error) {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	if c, ok := impl.(interface {
		DeleteObjectWithContext(context.Context, string, string) error
	}); ok {
		err = c.DeleteObjectWithContext(ctx, req.GetBucket(), req.GetKey())
	} else {
		err = impl.DeleteObject(req.GetBucket(), req.GetKey())
	}
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, nil
}

func (s objectStoreServer) CreateSignedURL(_ context.Context, req *pb.CreateSignedURLRequest) (*pb.CreateSignedURLResponse, error) {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	url, err := impl.CreateSignedURL(req.GetBucket(), req.GetKey(), time.Duration(req.GetTtl()))
	if err != nil {
		return nil, err
	}
	return &pb.CreateSignedURLResponse{Url: url}, nil
}

// snapshotter serves the v1 methods, for both snapshotter versions: get
// finds the implementation of a name.
type snapshotter struct {
	get func(name string) (VolumeSnapshotter, error)
}

func (s snapshotter) Init(_ context.Context, req *pb.VolumeSnapshotterInitRequest) (*pb.Empty, error) {
	impl, err := s.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	if err := impl.Init(req.GetConfig()); err != nil {
		return nil, err
	}
	return &pb.Empty{}, nil
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
	var id string
	if c, ok := impl.(interface {
		CreateVolumeFromSnapshotWithContext(context.Context, string, string, string, *int64) (string, error)
	}); ok {
		id, err = c.CreateVolumeFromSnapshotWithContext(ctx, req.GetSnapshotID(), req.GetVolumeType(), req.GetVolumeAZ(), iops)
	} else {
		id, err = impl.CreateVolumeFromSnapshot(req.GetSnapshotID(), req.GetVolumeType(), req.GetVolumeAZ(), iops)
	}
	if err != nil {
		return nil, err
	}
	return &pb.CreateVolumeResponse{VolumeID: id}, nil
}

func (s snapshotter) GetVolumeInfo(ctx context.Context, req *pb.GetVolumeInfoRequest) (*pb.GetVolumeInfoResponse, error) {
	impl, err := s.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	var (
		volumeType string
		iops       *int64
	)
	if c, ok := impl.(interface {
		GetVolumeInfoWithContext(context.Context, string, string) (string, *int64, error)
	}); ok {
		volumeType, iops, err = c.GetVolumeInfoWithContext(ctx, req.GetVolumeID(), req.GetVolumeAZ())
	} else {
		volumeType, iops, err = impl.GetVolumeInfo(req.GetVolumeID(), req.GetVolumeAZ())
	}
	if err != nil {
		return nil, err
	}
	resp := &pb.GetVolumeInfoResponse{VolumeType: volumeType}
	if iops != nil {
		resp.Iops = *iops
	}
	return resp, nil
}

func (s snapshotter) CreateSnapshot(ctx context.Context, req *pb.CreateSnapshotRequest) (*pb.CreateSnapshotResponse, error) {
	impl, err := s.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	var id string
	if c, ok := impl.(interface {
		CreateSnapshotWithContext(context.Context, string, string, map[string]string) (string, error)
	}); ok {
		id, err = c.CreateSnapshotWithContext(ctx, req.GetVolumeID(), req.GetVolumeAZ(), req.GetTags())
	} else {
		id, err = impl.CreateSnapshot(req.GetVolumeID(), req.GetVolumeAZ(), req.GetTags())
	}
	if err != nil {
		return nil, err
	}
	return &pb.CreateSnapshotResponse{SnapshotID: id}, nil
}

func (s snapshotter) DeleteSnapshot(ctx context.Context, req *pb.DeleteSnapshotRequest) (*pb.Empty, error) {
	impl, err := s.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	if c, ok := impl.(interface {
		DeleteSnapshotWithContext(context.Context, string) error
	}); ok {
		err = c.DeleteSnapshotWithContext(ctx, req.GetSnapshotID())
	} else {
		err = impl.DeleteSnapshot(req.GetSnapshotID())
	}
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, nil
}

func (s snapshotter) GetVolumeID(_ context.Context, req *pb.GetVolumeIDRequest) (*pb.GetVolumeIDResponse, error) {
	impl, err := s.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	pv, err := decodeItem(req.GetPersistentVolume(), "persistentVolume")
	if err != nil {
		return nil, err
	}
	id, err := impl.GetVolumeID(asUnstructured(pv))
	if err != nil {
		return nil, err
	}
	return &pb.GetVolumeIDResponse{VolumeID: id}, nil
}

func (s snapshotter) SetVolumeID(_ context.Context, req *pb.SetVolumeIDRequest) (*pb.SetVolumeIDResponse, error) {
	impl, err := s.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	pv, err := decodeItem(req.GetPersistentVolume(), "persistentVolume")
	if err != nil {
		return nil, err
	}
	var updated runtime.Unstructured
	if updated, err = impl.SetVolumeID(asUnstructured(pv), req.GetVolumeID()); err != nil {
		return nil, err
	}
	b, err := encodeItem(updated, req.GetPersistentVolume())
	if err != nil {
		return nil, err
	}
	return &pb.SetVolumeIDResponse{PersistentVolume: b}, nil
}

// registerVSv1 is a no-op: the v1 snapshotter service is registered once by
// registerSnapshotterV1Service, for v1 and v2 snapshotters alike.
func registerVSv1(*registry[VolumeSnapshotter], *grpc.Server) {}

// registerSnapshotterV1Service serves the v1 snapshotter service for every
// snapshotter, v1 or v2: a Velero host knows only v1 and calls a v2
// snapshotter through it.
func registerSnapshotterV1Service(s *Server, g *grpc.Server) {
	v1, hasV1 := s.kinds[kind.VolumeSnapshotter].(*kindServer[VolumeSnapshotter])
	v2, hasV2 := s.kinds[kind.VolumeSnapshotterV2].(*kindServer[VolumeSnapshotterV2])
	if !hasV1 && !hasV2 {
		return
	}
	pb.RegisterVolumeSnapshotterServer(g, snapshotter{get: func(name string) (VolumeSnapshotter, error) {
		if hasV1 {
			if _, ok := v1.r.factories[name]; ok || !hasV2 {
				return v1.r.get(name)
			}
		}
		return v2.r.get(name)
	}})
}

type vsV2Server struct {
	snapshotter
	r *registry[VolumeSnapshotterV2]
}

func registerVSv2(r *registry[VolumeSnapshotterV2], g *grpc.Server) {
	get := func(name string) (VolumeSnapshotter, error) { return r.get(name) }
	vsv2.RegisterVolumeSnapshotterServer(g, vsV2Server{snapshotter: snapshotter{get: get}, r: r})
}

func (s vsV2Server) Progress(ctx context.Context, req *vsv2.VolumeSnapshotterProgressRequest) (*vsv2.VolumeSnapshotterProgressResponse, error) {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	var p OperationProgress
	if c, ok := impl.(interface {
		ProgressWithContext(context.Context, string) (OperationProgress, error)
	}); ok {
		p, err = c.ProgressWithContext(ctx, req.GetSnapshotID())
	} else {
		p, err = impl.Progress(req.GetSnapshotID())
	}
	if err != nil {
		return nil, err
	}
	return &vsv2.VolumeSnapshotterProgressResponse{Progress: wire.ProgressToProto(p)}, nil
}

func (s vsV2Server) Cancel(ctx context.Context, req *vsv2.VolumeSnapshotterCancelRequest) (*emptypb.Empty, error) {
	impl, err := s.r.get(req.GetPlugin())
	if err != nil {
		return nil, err
	}
	if c, ok := impl.(interface {
		CancelWithContext(context.Context, string) error
	}); ok {
		err = c.CancelWithContext(ctx, req.GetOperationID())
	} else {
		err = impl.Cancel(req.GetOperationID())
	}
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
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
