package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// csiDrivers are the CSI drivers the node was started with, reached over
// their node service's socket as a kubelet reaches them.
type csiDrivers struct {
	cfg    *config
	client kubernetes.Interface
	conns  map[string]*grpc.ClientConn // driver name -> its node service

	mu     sync.Mutex
	staged map[string]int // driver/volume handle -> how many pods use the staged volume
}

func dialCSI(cfg *config, client kubernetes.Interface) (*csiDrivers, error) {
	d := &csiDrivers{cfg: cfg, client: client, conns: map[string]*grpc.ClientConn{}, staged: map[string]int{}}
	for name, endpoint := range cfg.csi {
		conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, fmt.Errorf("CSI driver %s at %s: %w", name, endpoint, err)
		}
		d.conns[name] = conn
	}
	return d, nil
}

// register writes the node's CSINode object with each driver's node ID
// (NodeGetInfo), as a kubelet does when a driver registers with it.
func (d *csiDrivers) register(ctx context.Context, node *corev1.Node) error {
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node.Name,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}}}
	for name, conn := range d.conns {
		info, err := csi.NewNodeClient(conn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
		if err != nil {
			return fmt.Errorf("CSI driver %s: NodeGetInfo: %w", name, err)
		}
		drv := storagev1.CSINodeDriver{Name: name, NodeID: info.NodeId}
		if info.MaxVolumesPerNode > 0 {
			drv.Allocatable = &storagev1.VolumeNodeResources{Count: ptr(int32(info.MaxVolumesPerNode))}
		}
		if t := info.AccessibleTopology; t != nil {
			for k := range t.Segments {
				drv.TopologyKeys = append(drv.TopologyKeys, k)
			}
		}
		csiNode.Spec.Drivers = append(csiNode.Spec.Drivers, drv)
	}
	_, err := d.client.StorageV1().CSINodes().Create(ctx, csiNode, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		old, err := d.client.StorageV1().CSINodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		old.Spec, old.OwnerReferences = csiNode.Spec, csiNode.OwnerReferences
		_, err = d.client.StorageV1().CSINodes().Update(ctx, old, metav1.UpdateOptions{})
		return err
	}
	return err
}

func accessMode(modes []corev1.PersistentVolumeAccessMode) csi.VolumeCapability_AccessMode_Mode {
	for _, m := range modes {
		switch m {
		case corev1.ReadWriteMany:
			return csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
		case corev1.ReadOnlyMany:
			return csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
		case corev1.ReadWriteOncePod:
			return csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		}
	}
	return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
}

func (d *csiDrivers) secrets(ctx context.Context, ref *corev1.SecretReference) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	s, err := d.client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out, nil
}

// publish makes a CSI volume appear at the pod's volume directory with
// the calls a kubelet makes: NodeStageVolume (once per volume on the node,
// when the driver stages) and NodePublishVolume; the teardown it returns
// makes NodeUnpublishVolume and, for the volume's last pod,
// NodeUnstageVolume.
func (d *csiDrivers) publish(ctx context.Context, r *podRun, pv *corev1.PersistentVolume, readOnly bool) (volume, error) {
	src := pv.Spec.CSI
	conn, ok := d.conns[src.Driver]
	if !ok {
		return volume{}, fmt.Errorf("volume %s is of CSI driver %s, which node %s was not started with (--csi %s=unix:///...)", pv.Name, src.Driver, d.cfg.nodeName, src.Driver)
	}
	node := csi.NewNodeClient(conn)
	caps, err := node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		return volume{}, fmt.Errorf("CSI driver %s: NodeGetCapabilities: %w", src.Driver, err)
	}
	stages := false
	for _, c := range caps.Capabilities {
		if c.GetRpc().GetType() == csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME {
			stages = true
		}
	}
	capability := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: src.FSType, MountFlags: pv.Spec.MountOptions}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: accessMode(pv.Spec.AccessModes)},
	}
	staging := ""
	stagedKey := src.Driver + "/" + src.VolumeHandle
	if stages {
		staging = filepath.Join(d.cfg.kubeletDir(), "plugins", "kubernetes.io", "csi", src.Driver,
			fmt.Sprintf("%x", sha256.Sum256([]byte(src.VolumeHandle))), "globalmount")
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.staged[stagedKey] == 0 {
			if err := os.MkdirAll(staging, 0o750); err != nil {
				return volume{}, err
			}
			secrets, err := d.secrets(ctx, src.NodeStageSecretRef)
			if err != nil {
				return volume{}, err
			}
			if _, err := node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
				VolumeId: src.VolumeHandle, StagingTargetPath: staging, VolumeCapability: capability,
				Secrets: secrets, VolumeContext: src.VolumeAttributes,
			}); err != nil {
				return volume{}, fmt.Errorf("CSI driver %s: NodeStageVolume of %s: %w", src.Driver, pv.Name, err)
			}
		}
		d.staged[stagedKey]++
	}
	unstage := func() error {
		if !stages {
			return nil
		}
		if d.staged[stagedKey]--; d.staged[stagedKey] > 0 {
			return nil
		}
		delete(d.staged, stagedKey)
		if _, err := node.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging}); err != nil {
			return fmt.Errorf("CSI driver %s: NodeUnstageVolume of %s: %w", src.Driver, pv.Name, err)
		}
		return nil
	}
	parent, err := r.pluginDir("kubernetes.io~csi", pv.Name)
	if err != nil {
		_ = unstage()
		return volume{}, err
	}
	target := filepath.Join(parent, "mount")
	secrets, err := d.secrets(ctx, src.NodePublishSecretRef)
	if err != nil {
		_ = unstage()
		return volume{}, err
	}
	attrs := map[string]string{}
	for k, v := range src.VolumeAttributes {
		attrs[k] = v
	}
	if drv, err := d.client.StorageV1().CSIDrivers().Get(ctx, src.Driver, metav1.GetOptions{}); err == nil && drv.Spec.PodInfoOnMount != nil && *drv.Spec.PodInfoOnMount {
		attrs["csi.storage.k8s.io/pod.name"] = r.pod.Name
		attrs["csi.storage.k8s.io/pod.namespace"] = r.pod.Namespace
		attrs["csi.storage.k8s.io/pod.uid"] = string(r.pod.UID)
		attrs["csi.storage.k8s.io/serviceAccount.name"] = r.serviceAccount()
		attrs["csi.storage.k8s.io/ephemeral"] = "false"
	}
	ro := readOnly || src.ReadOnly
	if _, err := node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId: src.VolumeHandle, StagingTargetPath: staging, TargetPath: target, VolumeCapability: capability,
		Readonly: ro, Secrets: secrets, VolumeContext: attrs,
	}); err != nil {
		_ = unstage()
		return volume{}, fmt.Errorf("CSI driver %s: NodePublishVolume of %s: %w", src.Driver, pv.Name, err)
	}
	return volume{dir: target, readOnly: ro, teardown: func() error {
		if _, err := node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: src.VolumeHandle, TargetPath: target}); err != nil {
			return fmt.Errorf("CSI driver %s: NodeUnpublishVolume of %s: %w", src.Driver, pv.Name, err)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		return unstage()
	}}, nil
}
