package csidriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// DefaultCapacity is a volume's size when its claim asks for none.
const DefaultCapacity = 1 << 30

// Driver is a CSI driver whose volumes are directories under Root/volumes
// and whose snapshots are copies under Root/snapshots; its node service
// (node.go) mounts a volume's directory where a pod's container sees it.
// Everything it knows is in those directories, so a new Driver on the same
// Root carries on where an old one stopped.
type Driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	Name string
	Root string

	mu       sync.Mutex // one change at a time: the sidecars retry, never race
	delay    time.Duration
	cutDelay time.Duration
	failure  string
	// publishFailure makes NodePublishVolume fail (FailPublish).
	publishFailure string

	nodeCalls []NodeCall
}

// SetCutDelay makes CreateSnapshot wait d before it cuts a new snapshot,
// as a storage system that quiesces a volume first does.
func (d *Driver) SetCutDelay(delay time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cutDelay = delay
}

// FailSnapshots makes CreateSnapshot fail with msg from now on ("" stops
// it), as a storage system out of space would.
func (d *Driver) FailSnapshots(msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failure = msg
}

// FailPublish makes NodePublishVolume fail with msg from now on ("" stops
// it), as a node whose storage path is down would: pods that mount the
// driver's volumes wait, and their kubelet tries again.
func (d *Driver) FailPublish(msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.publishFailure = msg
}

// SetSnapshotDelay makes snapshots taken from now on report ready only d
// after they were cut (the copy is made at once), as a storage system's
// snapshot that uploads in the background does.
func (d *Driver) SetSnapshotDelay(delay time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.delay = delay
}

// Record is what the driver keeps beside a volume or a snapshot.
type Record struct {
	ID       string    `json:"id"`
	Capacity int64     `json:"capacity"`
	Source   string    `json:"source,omitempty"` // a snapshot's volume, a volume's snapshot
	Created  time.Time `json:"created"`
	// Ready is when the snapshot reports ready (SetSnapshotDelay).
	Ready time.Time `json:"ready,omitzero"`
}

// ids are what the driver accepts as a volume's or snapshot's ID: they
// become directory names.
var ids = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,127}$`)

// VolumeDir is where volume id keeps its files.
func (d *Driver) VolumeDir(id string) string { return filepath.Join(d.Root, "volumes", id) }

// SnapshotDir is where snapshot id keeps its copy.
func (d *Driver) SnapshotDir(id string) string { return filepath.Join(d.Root, "snapshots", id) }

// Serve listens on the unix socket and serves until ctx ends.
func (d *Driver) Serve(ctx context.Context, socket string) error {
	for _, dir := range []string{"volumes", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(d.Root, dir), 0o755); err != nil {
			return err
		}
	}
	_ = os.Remove(socket)
	l, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	s := grpc.NewServer()
	csi.RegisterIdentityServer(s, d)
	csi.RegisterControllerServer(s, d)
	csi.RegisterNodeServer(s, d)
	go func() { <-ctx.Done(); s.Stop() }()
	return s.Serve(l)
}

func (d *Driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.Name, VendorVersion: "testbed"}, nil
}

func (d *Driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}},
	}}}, nil
}

func (d *Driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

func (d *Driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, c := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: c}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (d *Driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if _, err := d.read("volumes", req.GetVolumeId()); err != nil {
		return nil, err
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: req.GetVolumeCapabilities(),
	}}, nil
}

// CreateVolume makes a directory named for the request (the provisioner
// retries with the same name, so a second call finds the first's volume),
// filled from a snapshot when the claim has one as its data source.
func (d *Driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := req.GetName()
	if !ids.MatchString(id) {
		return nil, status.Errorf(codes.InvalidArgument, "volume name %q is not a valid ID", id)
	}
	size := req.GetCapacityRange().GetRequiredBytes()
	if size == 0 {
		size = DefaultCapacity
	}
	r := Record{ID: id, Capacity: size, Created: time.Now().UTC()}
	var source *csi.VolumeContentSource
	if snap := req.GetVolumeContentSource().GetSnapshot(); snap != nil {
		sr, err := d.read("snapshots", snap.GetSnapshotId())
		if err != nil {
			return nil, err
		}
		r.Source, r.Capacity = sr.ID, max(size, sr.Capacity)
		source = req.GetVolumeContentSource()
	} else if req.GetVolumeContentSource() != nil {
		return nil, status.Error(codes.InvalidArgument, "only snapshots can be a volume's source")
	}
	if old, err := d.read("volumes", id); err == nil {
		if old.Source != r.Source {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s exists with another source", id)
		}
		r = *old
	} else if status.Code(err) != codes.NotFound {
		return nil, err
	} else {
		tmp := d.VolumeDir(id) + ".tmp"
		_ = os.RemoveAll(tmp)
		if r.Source != "" {
			if err := copyTree(d.SnapshotDir(r.Source), tmp); err != nil {
				return nil, status.Errorf(codes.Internal, "volume %s from snapshot %s: %v", id, r.Source, err)
			}
		} else if err := os.MkdirAll(tmp, 0o777); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		if err := d.commit("volumes", tmp, r); err != nil {
			return nil, err
		}
	}
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: id, CapacityBytes: r.Capacity, ContentSource: source}}, nil
}

func (d *Driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return &csi.DeleteVolumeResponse{}, d.remove("volumes", req.GetVolumeId())
}

// CreateSnapshot copies the volume's directory; the copy is ready when the
// call returns.
func (d *Driver) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := req.GetName()
	if !ids.MatchString(id) {
		return nil, status.Errorf(codes.InvalidArgument, "snapshot name %q is not a valid ID", id)
	}
	if d.failure != "" {
		return nil, status.Error(codes.ResourceExhausted, d.failure)
	}
	vol, err := d.read("volumes", req.GetSourceVolumeId())
	if err != nil {
		return nil, err
	}
	r, err := d.read("snapshots", id)
	if status.Code(err) == codes.NotFound {
		time.Sleep(d.cutDelay)
		now := time.Now().UTC()
		r = &Record{ID: id, Capacity: vol.Capacity, Source: vol.ID, Created: now, Ready: now.Add(d.delay)}
		tmp := d.SnapshotDir(id) + ".tmp"
		_ = os.RemoveAll(tmp)
		if err := copyTree(d.VolumeDir(vol.ID), tmp); err != nil {
			return nil, status.Errorf(codes.Internal, "snapshot %s of volume %s: %v", id, vol.ID, err)
		}
		if err := d.commit("snapshots", tmp, *r); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	} else if r.Source != vol.ID {
		return nil, status.Errorf(codes.AlreadyExists, "snapshot %s exists of another volume", id)
	}
	return &csi.CreateSnapshotResponse{Snapshot: r.snapshot()}, nil
}

func (d *Driver) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return &csi.DeleteSnapshotResponse{}, d.remove("snapshots", req.GetSnapshotId())
}

func (d *Driver) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var recs []*Record
	if id := req.GetSnapshotId(); id != "" {
		r, err := d.read("snapshots", id)
		if status.Code(err) == codes.NotFound {
			return &csi.ListSnapshotsResponse{}, nil
		} else if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	} else {
		all, err := d.Snapshots()
		if err != nil {
			return nil, err
		}
		for _, r := range all {
			if req.GetSourceVolumeId() == "" || r.Source == req.GetSourceVolumeId() {
				recs = append(recs, r)
			}
		}
	}
	start := 0
	if tok := req.GetStartingToken(); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n > len(recs) {
			return nil, status.Errorf(codes.Aborted, "starting token %q is not one the driver gave", tok)
		}
		start = n
	}
	end := len(recs)
	if m := int(req.GetMaxEntries()); m > 0 && start+m < end {
		end = start + m
	}
	resp := &csi.ListSnapshotsResponse{}
	for _, r := range recs[start:end] {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: r.snapshot()})
	}
	if end < len(recs) {
		resp.NextToken = strconv.Itoa(end)
	}
	return resp, nil
}

// Snapshots lists the snapshots the driver holds, by ID.
func (d *Driver) Snapshots() ([]*Record, error) {
	return d.list("snapshots")
}

// LoseSnapshots deletes every snapshot the driver holds behind
// Kubernetes' back, as a storage system that is lost loses them: what
// still names them points at nothing.
func (d *Driver) LoseSnapshots() error {
	recs, err := d.Snapshots()
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := d.remove("snapshots", r.ID); err != nil {
			return err
		}
	}
	return nil
}

// Volumes lists the volumes the driver holds, by ID.
func (d *Driver) Volumes() ([]*Record, error) {
	return d.list("volumes")
}

func (r *Record) snapshot() *csi.Snapshot {
	return &csi.Snapshot{SnapshotId: r.ID, SourceVolumeId: r.Source, SizeBytes: r.Capacity,
		CreationTime: timestamppb.New(r.Created), ReadyToUse: !time.Now().Before(r.Ready)}
}

func (d *Driver) list(kind string) ([]*Record, error) {
	entries, err := os.ReadDir(filepath.Join(d.Root, kind))
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	var out []*Record
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		r, err := d.read(kind, name)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// read returns the record of a volume or snapshot; a directory without its
// record is one a crash left half made, and does not exist.
func (d *Driver) read(kind, id string) (*Record, error) {
	if !ids.MatchString(id) {
		return nil, status.Errorf(codes.NotFound, "%s %q does not exist", kind, id)
	}
	b, err := os.ReadFile(filepath.Join(d.Root, kind, id+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.NotFound, "%s %q does not exist", kind, id)
	} else if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	r := &Record{}
	if err := json.Unmarshal(b, r); err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: %v", kind, id, err)
	}
	return r, nil
}

// commit moves a finished directory into place, then writes its record:
// the record is what makes it exist.
func (d *Driver) commit(kind, tmp string, r Record) error {
	dir := filepath.Join(d.Root, kind, r.ID)
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	b, _ := json.Marshal(r)
	if err := os.WriteFile(dir+".json.tmp", b, 0o644); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if err := os.Rename(dir+".json.tmp", dir+".json"); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return nil
}

// remove deletes a record, then its directory; deleting what is not there
// succeeds, as CSI asks.
func (d *Driver) remove(kind, id string) error {
	if !ids.MatchString(id) {
		return nil
	}
	dir := filepath.Join(d.Root, kind, id)
	if err := os.Remove(dir + ".json"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return status.Error(codes.Internal, err.Error())
	}
	if err := os.RemoveAll(dir); err != nil {
		return status.Error(codes.Internal, fmt.Sprintf("%s %s: %v", kind, id, err))
	}
	return nil
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, info.Mode().Perm())
		}
		return nil // the testbed's volumes hold files and directories only
	})
}
