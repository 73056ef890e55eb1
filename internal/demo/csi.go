package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/podvolume"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// CSIVerdict is the last line of a successful `make demo-csi`.
const CSIVerdict = "DEMO PASSED: every file came back from the bucket alone"

// RunCSI tells the volume-data story: a volume's data moved into the
// bucket by a mover pod and a pod's emptyDir copied there by the node
// agent, the storage side lost, both restored from the bucket alone (the
// volume into a new volume, the emptyDir into the restored pod before it
// starts) and checked file by file.
func RunCSI(ctx context.Context, o Options) (err error) {
	o.PluginDir = "" // the built-in plugins tell this story
	d, r, end, err := begin(o, "salvor-demo-csi-")
	if err != nil {
		return err
	}
	defer end()

	d.say("Starting the storage and a node: a CSI driver whose volumes and snapshots are directories, csi-provisioner,\n    csi-snapshotter, the snapshot controller, kube-scheduler and a node that runs pods as local processes")
	start := time.Now()
	var csi *testbed.CSI
	var node *testbed.PodNode
	if err := r.step(func() {
		csi = testbed.StartCSI(r, d.kubeconfig, d.cfg)
		node = d.startNode(r, csi, testbed.WorkloadControllers)
	}); err != nil {
		return fmt.Errorf("starting the testbed (run `make testbed` first?): %w", err)
	}
	d.took("storage and node up", start)
	fmt.Fprintf(o.Out, "    node %s runs image salvor as %s; testbed logs: %s\n", node.Name, d.o.Salvor, filepath.Join(d.work, "testbed.log"))

	d.say("Installing Salvor (its roles, the mover pods' account, the node agent), starting salvor server, and MinIO for the bucket")
	if err := d.install(ctx, node, d.minioLocation(r), "--data-mover-image", demoImage); err != nil {
		return err
	}
	class := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
		"metadata": map[string]any{"name": "testbed-snapshots", "labels": map[string]any{salvorv1.CSISnapshotClassLabel: "true"}},
		"driver":   testbed.CSIDriverName, "deletionPolicy": "Delete"}}
	if err := d.create(ctx, class); err != nil {
		return err
	}

	d.say("An application's data: claim shop/data, provisioned by the CSI driver, filled with files")
	pv, sums, size, err := d.csiVolume(ctx, csi)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "    %d files, %d MiB, in volume %s at %s\n", len(sums), size>>20, pv, csi.Driver.VolumeDir(pv))
	d.say("And pod shop/web's emptyDir uploads, a volume no storage system snapshots, annotated for file-system backup")
	web := filesPod{namespace: "shop", name: "web", volume: "uploads", mountPath: "/uploads"}
	dir, err := web.run(ctx, d, node)
	if err != nil {
		return err
	}
	podSums, podSize, err := randomFiles(dir, 64, 256<<10, 5, 0o644, func(i int) string {
		return filepath.Join(fmt.Sprintf("2026-12-%02d", 1+i%8), fmt.Sprintf("upload-%03d.jpg", i))
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "    %d files, %d MiB, in pod %s's volume uploads on node %s (annotation %s=uploads)\n",
		len(podSums), podSize>>20, web, node.Name, podvolume.IncludeAnnotation)

	d.say("Backing it up, moving the snapshot's data into the bucket")
	t := time.Now()
	if err := d.salvor(ctx, "backup", "create", "shop-offsite", "--include-namespaces", "shop", "--snapshot-move-data", "--wait"); err != nil {
		return err
	}
	d.took(fmt.Sprintf("backup, %d MiB moved by a mover pod, %d MiB copied by the node agent", size>>20, podSize>>20), t)
	if err := d.salvor(ctx, "backup", "describe", "shop-offsite", "--details"); err != nil {
		return err
	}
	uploads := &salvorv1.DataUploadList{}
	if err := d.c.List(ctx, uploads, client.InNamespace("salvor")); err != nil {
		return err
	}
	for _, du := range uploads.Items {
		fmt.Fprintf(o.Out, "    DataUpload %s: %s on node %s, kopia snapshot %s, %d bytes, %d new, at s3://backups/cluster-a/kopia/%s/\n",
			du.Name, du.Status.Phase, du.Status.Node, du.Status.SnapshotID, du.Status.Progress.TotalBytes, du.Status.IncrementalBytes, du.Spec.SourceNamespace)
	}
	if _, _, _, err := d.podVolumeBackups(ctx, "shop-offsite"); err != nil {
		return err
	}

	// The data is in the bucket: the storage keeps no snapshot of it.
	if err := d.eventually(ctx, 2*time.Minute, func() bool {
		snaps, err := csi.Driver.Snapshots()
		return err == nil && len(snaps) == 0
	}); err != nil {
		return errors.New("the storage-side snapshot was not released after its data moved")
	}
	fmt.Fprintln(o.Out, "    the storage-side snapshot released once its data was in the bucket: the driver holds no snapshot")

	d.say("Disaster: the storage system is lost — namespace shop, its volume and its pod's files deleted, every snapshot gone from the driver")
	if err := d.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		return err
	}
	if err := d.eventually(ctx, 2*time.Minute, func() bool {
		_, err := os.Stat(csi.Driver.VolumeDir(pv))
		return errors.Is(err, os.ErrNotExist)
	}); err != nil {
		return fmt.Errorf("volume %s was not deleted by its driver", pv)
	}
	snaps, err := csi.Driver.Snapshots()
	if err != nil {
		return err
	}
	if err := csi.Driver.LoseSnapshots(); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "    volume %s deleted; %d snapshot(s) lost with the storage\n", pv, len(snaps))
	if err := d.eventually(ctx, 2*time.Minute, func() bool {
		return apierrors.IsNotFound(d.c.Get(ctx, client.ObjectKey{Name: "shop"}, &corev1.Namespace{}))
	}); err != nil {
		return errors.New("namespace shop did not go away")
	}

	d.say("Restoring from the bucket alone")
	t = time.Now()
	if err := d.salvor(ctx, "restore", "create", "shop-back", "--from-backup", "shop-offsite", "--wait"); err != nil {
		return err
	}
	d.took("restore, the data written by a mover pod into a new volume and by the node agent into the pod's", t)

	d.say("Checking every file against the original")
	claim := &corev1.PersistentVolumeClaim{}
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "data"}, claim); err != nil {
		return fmt.Errorf("restored claim shop/data: %w", err)
	}
	diffs := d.differing(csi.Driver.VolumeDir(claim.Spec.VolumeName), "", sums)
	fmt.Fprintf(o.Out, "    claim shop/data bound to new volume %s (no snapshot as its source): %d of %d files identical (sha256)\n",
		claim.Spec.VolumeName, len(sums)-diffs, len(sums))
	podDiffs, err := web.check(ctx, d, node, podSums)
	if err != nil {
		return err
	}
	diffs += podDiffs

	d.say("Summary")
	tw := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "    WHAT\tRESULT")
	for _, tm := range d.timings {
		fmt.Fprintf(tw, "    %s\t%s\n", tm[0], tm[1])
	}
	_ = tw.Flush()
	rs := &salvorv1.Restore{}
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "shop-back"}, rs); err != nil {
		return err
	}
	if diffs > 0 || rs.Status.Phase != salvorv1.RestorePhaseCompleted {
		return fmt.Errorf("%d files did not come back as they were (restore %s)", diffs, rs.Status.Phase)
	}
	fmt.Fprintf(o.Out, "\n%s\n", CSIVerdict)
	return nil
}

// csiVolume makes claim shop/data in the CSI driver's class, waits until
// it is bound, and writes 64 MiB of random files into its volume (as the
// application would have); it returns the volume and each file's sum.
func (d *demo) csiVolume(ctx context.Context, csi *testbed.CSI) (string, map[string]string, int64, error) {
	class := csi.StorageClass
	if err := d.create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}); err != nil {
		return "", nil, 0, err
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := d.eventually(ctx, 2*time.Minute, func() bool {
		err := d.c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "data"}, claim)
		return err == nil && claim.Status.Phase == corev1.ClaimBound
	}); err != nil {
		return "", nil, 0, errors.New("claim shop/data was not bound")
	}
	sums, total, err := randomFiles(csi.Driver.VolumeDir(claim.Spec.VolumeName), 64, 1<<20, 3, 0o640, func(i int) string {
		return filepath.Join(fmt.Sprintf("orders-%d", i%4), fmt.Sprintf("part-%03d.bin", i))
	})
	if err != nil {
		return "", nil, 0, err
	}
	return claim.Spec.VolumeName, sums, total, nil
}
