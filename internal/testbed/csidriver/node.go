package csidriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The node service: a volume is staged by binding its directory at the
// staging path and published by binding that at the target path, the
// calls a kubelet (the testbed node) makes before a pod's containers
// start and after they end.

// NodeID is the node ID the driver reports (NodeGetInfo).
const NodeID = "testbed"

func (d *Driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: NodeID}, nil
}

func (d *Driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{
		Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}},
	}}}, nil
}

func (d *Driver) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if req.VolumeId == "" || req.StagingTargetPath == "" || req.VolumeCapability == nil {
		return nil, status.Error(codes.InvalidArgument, "NodeStageVolume needs a volume ID, a staging target path and a volume capability")
	}
	if req.VolumeCapability.GetBlock() != nil {
		return nil, status.Error(codes.InvalidArgument, "the testbed driver's volumes are file systems, not block devices")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	src := d.VolumeDir(req.VolumeId)
	if _, err := os.Stat(src); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", req.VolumeId, err)
	}
	if err := bind(src, req.StagingTargetPath, false); err != nil {
		return nil, status.Errorf(codes.Internal, "staging volume %s: %v", req.VolumeId, err)
	}
	d.log("stage", req.VolumeId, req.StagingTargetPath)
	return &csi.NodeStageVolumeResponse{}, nil
}

func (d *Driver) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if req.VolumeId == "" || req.StagingTargetPath == "" {
		return nil, status.Error(codes.InvalidArgument, "NodeUnstageVolume needs a volume ID and a staging target path")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := unbind(req.StagingTargetPath, false); err != nil {
		return nil, status.Errorf(codes.Internal, "unstaging volume %s: %v", req.VolumeId, err)
	}
	d.log("unstage", req.VolumeId, req.StagingTargetPath)
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (d *Driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	if req.VolumeId == "" || req.TargetPath == "" || req.VolumeCapability == nil {
		return nil, status.Error(codes.InvalidArgument, "NodePublishVolume needs a volume ID, a target path and a volume capability")
	}
	if req.StagingTargetPath == "" {
		return nil, status.Error(codes.FailedPrecondition, "the testbed driver stages volumes (STAGE_UNSTAGE_VOLUME): NodePublishVolume needs the staging target path")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !mounted(req.StagingTargetPath) {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s", req.VolumeId, req.StagingTargetPath)
	}
	if d.publishFailure != "" {
		return nil, status.Errorf(codes.Unavailable, "publishing volume %s: %s", req.VolumeId, d.publishFailure)
	}
	if err := bind(req.StagingTargetPath, req.TargetPath, req.Readonly); err != nil {
		return nil, status.Errorf(codes.Internal, "publishing volume %s: %v", req.VolumeId, err)
	}
	d.log("publish", req.VolumeId, req.TargetPath)
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *Driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if req.VolumeId == "" || req.TargetPath == "" {
		return nil, status.Error(codes.InvalidArgument, "NodeUnpublishVolume needs a volume ID and a target path")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := unbind(req.TargetPath, true); err != nil {
		return nil, status.Errorf(codes.Internal, "unpublishing volume %s: %v", req.VolumeId, err)
	}
	d.log("unpublish", req.VolumeId, req.TargetPath)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// NodeCall is one node service call the driver served.
type NodeCall struct {
	Method   string // stage, unstage, publish, unpublish
	VolumeID string
	Path     string
}

func (d *Driver) log(method, id, path string) {
	d.nodeCalls = append(d.nodeCalls, NodeCall{Method: method, VolumeID: id, Path: path})
}

// NodeCalls are the node service calls served so far, in order.
func (d *Driver) NodeCalls() []NodeCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]NodeCall(nil), d.nodeCalls...)
}

// bind mounts src at dst (made if missing), read-only if asked; a dst
// already mounted is left as it is (the calls are idempotent).
func bind(src, dst string, readOnly bool) error {
	if mounted(dst) {
		return nil
	}
	if err := os.MkdirAll(dst, 0o750); err != nil {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", src, dst, err)
	}
	if readOnly {
		if err := unix.Mount("", dst, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(dst, unix.MNT_DETACH)
			return fmt.Errorf("read-only %s: %w", dst, err)
		}
	}
	return nil
}

// unbind unmounts p if it is mounted; remove also removes the directory
// (a target path is the driver's to remove, a staging path the CO's).
func unbind(p string, remove bool) error {
	if mounted(p) {
		if err := unix.Unmount(p, 0); err != nil {
			return fmt.Errorf("unmount %s: %w", p, err)
		}
	}
	if remove {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// mounted says whether p is a mount point, from the mount table.
func mounted(p string) bool {
	abs, err := filepath.Abs(p)
	if err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && unescape(f[4]) == abs {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes (a space is \040).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
