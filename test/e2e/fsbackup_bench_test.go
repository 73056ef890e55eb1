package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/podvolume"
	"github.com/salvor-dev/salvor/internal/testbin"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// BenchmarkFSBackupBesideVelero: file-system backup and restore of the same
// pod volumes (an emptyDir holding one large file, then one holding many
// small files) by Salvor's node agent, by Velero 1.18's node agent and by
// kopia's CLI reading the volume's directory, in the same run on the same
// testbed node and MinIO. Each tool writes its own bucket; each backup is
// a first, full one. Backups are timed from create to Completed, restores
// from create to Completed (both tools complete a restore only once the
// volume's files are written), and the restored files are counted.
func BenchmarkFSBackupBesideVelero(b *testing.B) {
	mib := testbin.EnvCount(b, "SALVOR_BENCH_FS_MIB", 1024)
	files := testbin.EnvCount(b, "SALVOR_BENCH_SMALL_FILES", 100000)
	v := buildVelero(b)
	kopiaBin, err := testbin.KopiaCLI()
	if err != nil {
		b.Fatal(err)
	}
	c, _, minio, node, _ := moverClusterWith(b, map[string]string{"velero": v.onNode, "velero-restore-helper": v.restoreHelper}, []string{"backups", "velero", "kopia"})
	// Velero's CRDs first: installing Salvor again (with its node agent)
	// then gives the server read access to them, as docs/install.md says.
	c.installVelero(b, v, minio, "velero")
	c.installNodeAgent(b, node)
	c.installVeleroNodeAgent(b, v, minio)
	vs := c.startVelero(b, v, minio)
	defer vs.stop()

	work := b.TempDir()
	kopia := func(args ...string) (time.Duration, []byte) {
		cmd := exec.Command(kopiaBin, args...)
		cmd.Env = append(os.Environ(), "KOPIA_PASSWORD=bench-password", "KOPIA_CONFIG_PATH="+filepath.Join(work, "kopia.config"),
			"KOPIA_CHECK_FOR_UPDATES=false", "KOPIA_LOG_DIR="+filepath.Join(work, "kopia-logs"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("kopia %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return time.Since(start), out
	}
	kopia("repository", "create", "s3", "--bucket", "kopia", "--endpoint", strings.TrimPrefix(minio.Endpoint, "http://"), "--disable-tls",
		"--region", "minio", "--access-key", minio.AccessKey, "--secret-access-key", minio.SecretKey, "--cache-directory", filepath.Join(work, "kopia-cache"))
	kopia("policy", "set", "--global", "--compression", "zstd-fastest") // the node agent's

	var rows []string
	row := func(data, tool, op string, d time.Duration, bytes int64, copying time.Duration) {
		fmt.Fprintf(os.Stderr, "%s: %s %s took %.2f s (copy %.0f s)\n", data, tool, op, d.Seconds(), copying.Seconds()) // progress: the run is long
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %.2f | %.0f | %.0f |", data, tool, op, d.Seconds(), float64(bytes)/(1<<20)/d.Seconds(), copying.Seconds()))
	}
	b.ResetTimer()
	for _, set := range []struct {
		ns, name string
		fill     func(dir string)
	}{
		{"fs-large", fmt.Sprintf("1 file, %d MiB", mib), func(dir string) { writeRandom(b, filepath.Join(dir, "big.bin"), int64(mib)<<20) }},
		{"fs-small", fmt.Sprintf("%d files, %d MiB", files, mib), func(dir string) {
			for i := range files {
				writeRandom(b, filepath.Join(dir, fmt.Sprintf("d%03d", i/1000), fmt.Sprintf("f%05d", i)), int64(mib)<<20/int64(files))
			}
		}},
	} {
		c.create(b, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: set.ns}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: set.ns, Name: "app", Annotations: map[string]string{podvolume.IncludeAnnotation: "data"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox", Command: []string{"sleep", "36000"},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}})
		c.waitPodRunning(b, set.ns, "app")
		dir := c.podVolumeDir(b, node, set.ns, "app", "data")
		set.fill(dir)
		total := filesBytes(b, dir)

		start := time.Now()
		_, _ = c.salvor(b, "backup", "create", set.ns, "--include-namespaces", set.ns, "--wait")
		took := time.Since(start)
		if got := c.getBackup(b, set.ns); got.Status.Phase != salvorv1.BackupPhaseCompleted {
			b.Fatalf("Salvor's backup of %s: %+v\n%s", set.ns, got.Status, c.mustSalvor(b, "backup", "describe", set.ns, "--details"))
		}
		row(set.name, "salvor node agent", "backup", took, total, c.copyTime(b, salvorPodVolumeBackups, "salvor", salvorv1.BackupNameLabel+"="+set.ns))

		start = time.Now()
		vb := c.veleroBackupOf(b, set.ns, set.ns)
		took = time.Since(start)
		if phase, _, _ := unstructured.NestedString(vb.Object, "status", "phase"); phase != "Completed" {
			b.Fatalf("Velero's backup of %s ended %s: %v\n%s", set.ns, phase, vb.Object["status"], veleroErrors(vs))
		}
		row(set.name, "velero node agent", "backup", took, total, c.copyTime(b, veleroPodVolumeBackups, "velero", "velero.io/backup-name="+set.ns))

		took, _ = kopia("snapshot", "create", dir)
		row(set.name, "kopia CLI", "backup (the volume's directory)", took, total, took)

		start = time.Now()
		c.mustSalvor(b, "restore", "create", set.ns+"-s", "--from-backup", set.ns, "--namespace-mappings", set.ns+":"+set.ns+"-s", "--wait")
		took = time.Since(start)
		if r := c.waitRestore(b, set.ns+"-s", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed); r.Status.Phase != salvorv1.RestorePhaseCompleted {
			b.Fatalf("Salvor's restore of %s: %+v", set.ns, r.Status)
		}
		restored := c.podVolumeDir(b, node, set.ns+"-s", "app", "data")
		if got := filesBytes(b, restored); got != total {
			b.Fatalf("Salvor's node agent restored %d bytes of %d", got, total)
		}
		row(set.name, "salvor node agent", "restore", took, total, c.copyTime(b, salvorPodVolumeRestores, "salvor", salvorv1.RestoreNameLabel+"="+set.ns+"-s"))

		start = time.Now()
		vr := c.veleroRestoreOf(b, set.ns, set.ns+"-v", map[string]any{"namespaceMapping": map[string]any{set.ns: set.ns + "-v"}})
		took = time.Since(start)
		if phase, _, _ := unstructured.NestedString(vr.Object, "status", "phase"); phase != "Completed" {
			b.Fatalf("Velero's restore of %s ended %s: %v\n%s\n%s", set.ns, phase, vr.Object["status"], veleroErrors(vs), c.veleroPods(b))
		}
		if got := filesBytes(b, c.podVolumeDir(b, node, set.ns+"-v", "app", "data")); got != total {
			b.Fatalf("Velero's node agent restored %d bytes of %d", got, total)
		}
		row(set.name, "velero node agent", "restore", took, total, c.copyTime(b, veleroPodVolumeRestores, "velero", "velero.io/restore-name="+set.ns+"-v"))

		out := filepath.Join(work, "restored-"+set.ns)
		_, list := kopia("snapshot", "list", dir, "--json")
		var snaps []struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(list, &snaps); err != nil || len(snaps) == 0 {
			b.Fatalf("kopia snapshot list: %v\n%s", err, list)
		}
		took, _ = kopia("snapshot", "restore", snaps[len(snaps)-1].ID, out)
		if got := filesBytes(b, out); got != total {
			b.Fatalf("kopia's CLI restored %d bytes of %d", got, total)
		}
		row(set.name, "kopia CLI", "restore (into a directory)", took, total, took)
		if err := os.RemoveAll(out); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	fmt.Println("| data | tool | operation | seconds | MiB/s | copy, s |")
	fmt.Println("|---|---|---|---:|---:|---:|")
	for _, r := range rows {
		fmt.Println(r)
	}
}

var (
	salvorPodVolumeBackups  = salvorv1.GroupVersion.WithResource("podvolumebackups")
	salvorPodVolumeRestores = salvorv1.GroupVersion.WithResource("podvolumerestores")
	veleroPodVolumeBackups  = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "podvolumebackups"}
	veleroPodVolumeRestores = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "podvolumerestores"}
)

// copyTime is how long the node agents' copies of a run took, from the
// first one's start to the last one's completion (their status
// timestamps, whole seconds): the part of a backup or restore that is the
// copy, apart from the machinery around it.
func (c *cluster) copyTime(b testing.TB, gvr schema.GroupVersionResource, ns, selector string) time.Duration {
	b.Helper()
	list, err := c.dynamic(b).Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil || len(list.Items) == 0 {
		b.Fatalf("%s in %s (%s): %v (%d)", gvr.Resource, ns, selector, err, len(list.Items))
	}
	var first, last time.Time
	for _, it := range list.Items {
		start, _, _ := unstructured.NestedString(it.Object, "status", "startTimestamp")
		end, _, _ := unstructured.NestedString(it.Object, "status", "completionTimestamp")
		s, err1 := time.Parse(time.RFC3339, start)
		e, err2 := time.Parse(time.RFC3339, end)
		if err1 != nil || err2 != nil {
			b.Fatalf("%s %s/%s: start %q, completion %q", gvr.Resource, ns, it.GetName(), start, end)
		}
		if first.IsZero() || s.Before(first) {
			first = s
		}
		if e.After(last) {
			last = e
		}
	}
	return last.Sub(first)
}

// veleroBackupOf has Velero back up namespace ns, its pods' annotated
// volumes by its file-system backup, and waits for the end.
func (c *cluster) veleroBackupOf(b testing.TB, name, ns string) *unstructured.Unstructured {
	b.Helper()
	backup := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "velero.io/v1", "kind": "Backup",
		"metadata": map[string]any{"name": name, "namespace": "velero"},
		"spec":     map[string]any{"includedNamespaces": []any{ns}, "storageLocation": "default", "snapshotVolumes": false},
	}}
	if _, err := c.dynamic(b).Resource(veleroBackups).Namespace("velero").Create(context.Background(), backup, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	return c.watchObject(b, veleroBackups, "velero", name, veleroEnded)
}

// writeRandom writes size bytes of incompressible data to path.
func writeRandom(t testing.TB, path string, size int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// Seeded by the path: no two files alike, or kopia would store one.
	r := rand.NewChaCha8(sha256.Sum256([]byte(path)))
	buf := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(buf)) {
		n := min(left, int64(len(buf)))
		_, _ = r.Read(buf[:n])
		if _, err := f.Write(buf[:n]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// filesBytes is the size of the regular files under dir, Velero's restore
// marker (.velero/) left out.
func filesBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".velero" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
