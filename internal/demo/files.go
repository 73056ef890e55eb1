package demo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/podvolume"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// randomFiles writes n files of size random bytes (the same for the same
// seed) into dir, the i-th at name(i), as an application would have, and
// returns each file's SHA-256 and the bytes written.
func randomFiles(dir string, n, size int, seed uint64, mode os.FileMode, name func(int) string) (map[string]string, int64, error) {
	sums := map[string]string{}
	var total int64
	rng := rand.New(rand.NewPCG(seed, seed+1))
	buf := make([]byte, size)
	for i := range n {
		for j := range buf {
			buf[j] = byte(rng.Uint32())
		}
		rel := name(i)
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			return nil, 0, err
		}
		if err := os.WriteFile(filepath.Join(dir, rel), buf, mode); err != nil {
			return nil, 0, err
		}
		sum := sha256.Sum256(buf)
		sums[rel] = hex.EncodeToString(sum[:])
		total += int64(size)
	}
	return sums, total, nil
}

// differing prints each file of sums that is missing under dir or holds
// other bytes (named under label) and returns how many are.
func (d *demo) differing(dir, label string, sums map[string]string) int {
	n := 0
	for name, want := range sums {
		b, err := os.ReadFile(filepath.Join(dir, name))
		sum := sha256.Sum256(b)
		if err != nil || hex.EncodeToString(sum[:]) != want {
			fmt.Fprintf(d.o.Out, "    DIFFERS  %s\n", filepath.Join(label, name))
			n++
		}
	}
	return n
}

// filesPod is an application's pod with one emptyDir volume, annotated
// for file-system backup, on the testbed node.
type filesPod struct {
	namespace, name, volume, mountPath string
	serviceAccount                     string // "" for the namespace's default
}

func (p filesPod) String() string { return p.namespace + "/" + p.name }

// run creates the pod (a shell's sleep stands in for the application)
// and returns its volume's directory on node once it runs.
func (p filesPod) run(ctx context.Context, d *demo, node *testbed.PodNode) (string, error) {
	if err := d.create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name, Annotations: map[string]string{podvolume.IncludeAnnotation: p.volume}},
		Spec: corev1.PodSpec{ServiceAccountName: p.serviceAccount,
			Containers: []corev1.Container{{Name: p.name, Image: "busybox", Command: []string{"sleep", "36000"},
				VolumeMounts: []corev1.VolumeMount{{Name: p.volume, MountPath: p.mountPath}}}},
			Volumes: []corev1.Volume{{Name: p.volume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	}); err != nil {
		return "", err
	}
	return p.dir(ctx, d, node)
}

// dir waits until the pod runs on node and returns its volume's directory
// there (where the kubelet keeps an emptyDir, which the node agent reads).
func (p filesPod) dir(ctx context.Context, d *demo, node *testbed.PodNode) (string, error) {
	pod := &corev1.Pod{}
	if err := d.eventually(ctx, 2*time.Minute, func() bool {
		err := d.c.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: p.name}, pod)
		return err == nil && pod.Status.Phase == corev1.PodRunning
	}); err != nil {
		return "", fmt.Errorf("pod %s did not run (%s)", p, pod.Status.Phase)
	}
	return filepath.Join(node.PodDir(string(pod.UID)), "volumes", "kubernetes.io~empty-dir", p.volume), nil
}

// check compares the restored pod's files with sums and returns how many
// differ, each named.
func (p filesPod) check(ctx context.Context, d *demo, node *testbed.PodNode, sums map[string]string) (int, error) {
	dir, err := p.dir(ctx, d, node)
	if err != nil {
		return 0, err
	}
	bad := d.differing(dir, p.volume, sums)
	fmt.Fprintf(d.o.Out, "    pod %s running again, its files written by the node agent before it started: %d of %d files identical (sha256)\n",
		p, len(sums)-bad, len(sums))
	return bad, nil
}

// podVolumeBackups prints the PodVolumeBackups of backup and returns how
// many completed of how many, and their bytes.
func (d *demo) podVolumeBackups(ctx context.Context, backup string) (completed, all int, bytes int64, err error) {
	pvbs := &salvorv1.PodVolumeBackupList{}
	if err := d.c.List(ctx, pvbs, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.BackupNameLabel: salvorv1.LabelValue(backup)}); err != nil {
		return 0, 0, 0, err
	}
	for _, pvb := range pvbs.Items {
		fmt.Fprintf(d.o.Out, "    PodVolumeBackup %s: %s on node %s, pod %s/%s volume %s, kopia snapshot %s, %d bytes\n",
			pvb.Name, pvb.Status.Phase, pvb.Spec.Node, pvb.Spec.Pod.Namespace, pvb.Spec.Pod.Name, pvb.Spec.Volume, pvb.Status.SnapshotID, pvb.Status.Progress.TotalBytes)
		if pvb.Status.Phase == salvorv1.DataMoverPhaseCompleted {
			completed++
		}
		bytes += pvb.Status.Progress.TotalBytes
	}
	return completed, len(pvbs.Items), bytes, nil
}
