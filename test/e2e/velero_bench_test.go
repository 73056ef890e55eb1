package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
	"github.com/salvor-dev/salvor/internal/testbin"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// velero is Velero's server and AWS object store plugin, built from the Go
// module proxy at the versions test/compat/velero requires (that module may
// depend on Velero; Salvor's may not).
type velero struct {
	bin, plugins, version string
	// onNode is Velero's command for its pods on the testbed node
	// (test/compat/velero/cmd/velerotestbed).
	onNode string
	// restoreHelper is Velero's velero-restore-helper, the command of the
	// init container Velero's restore gives a pod whose volumes' files its
	// node agent writes.
	restoreHelper string
}

var (
	veleroOnce  sync.Once
	veleroBuilt velero
	veleroErr   error
)

// buildVelero builds Velero's command and its AWS plugin into
// bin/velero-<version>/ (kept between runs; go build's cache makes a second
// build quick), once per test binary: tests running in parallel share the
// build rather than overwrite a binary another is running.
func buildVelero(b testing.TB) velero {
	b.Helper()
	veleroOnce.Do(func() { veleroBuilt, veleroErr = doBuildVelero() })
	if veleroErr != nil {
		b.Fatal(veleroErr)
	}
	return veleroBuilt
}

func doBuildVelero() (velero, error) {
	root, err := testbin.ModuleRoot()
	if err != nil {
		return velero{}, err
	}
	mod := filepath.Join(root, "test", "compat", "velero")
	out, err := exec.Command("go", "-C", mod, "list", "-m", "-f", "{{.Version}}", "github.com/vmware-tanzu/velero").Output()
	if err != nil {
		return velero{}, fmt.Errorf("finding Velero's version in %s: %v", mod, err)
	}
	v := velero{version: strings.TrimSpace(string(out))}
	dir := filepath.Join(root, "bin", "velero-"+v.version)
	v.bin, v.plugins, v.onNode = filepath.Join(dir, "velero"), filepath.Join(dir, "plugins"), filepath.Join(dir, "velero-on-node")
	v.restoreHelper = filepath.Join(dir, "velero-restore-helper")
	for pkg, to := range map[string]string{
		"github.com/vmware-tanzu/velero/cmd/velero":                           v.bin,
		"github.com/vmware-tanzu/velero-plugin-for-aws/velero-plugin-for-aws": filepath.Join(v.plugins, "velero-plugin-for-aws"),
		"github.com/salvor-dev/salvor/test/compat/velero/cmd/velerotestbed":   v.onNode,
		"github.com/vmware-tanzu/velero/cmd/velero-restore-helper":            v.restoreHelper,
	} {
		build := exec.Command("go", "build", "-o", to, pkg)
		build.Dir = mod
		if out, err := build.CombinedOutput(); err != nil {
			return velero{}, fmt.Errorf("building %s: %v\n%s", pkg, err, out)
		}
	}
	return v, nil
}

var (
	veleroBackups  = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "backups"}
	veleroRestores = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "restores"}
	veleroBSLs     = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "backupstoragelocations"}
)

// installVelero gives the cluster what a Velero server outside it needs:
// Velero's CRDs (from its own install command), its namespace, a
// zero-replica velero Deployment (restores wait for one to exist) and a
// default BackupStorageLocation on the MinIO's bucket.
func (c *cluster) installVelero(b testing.TB, v velero, minio *testbed.MinIO, bucket string) {
	b.Helper()
	out, err := exec.Command(v.bin, "install", "--crds-only", "--dry-run", "-o", "json").Output()
	if err != nil {
		b.Fatalf("velero install --crds-only: %v", err)
	}
	list := &unstructured.UnstructuredList{}
	if err := list.UnmarshalJSON(out); err != nil {
		b.Fatalf("reading Velero's CRDs: %v", err)
	}
	var crds []string
	for i := range list.Items {
		crd := &list.Items[i]
		if err := c.client.Create(context.Background(), crd); err != nil {
			b.Fatalf("creating CRD %s: %v", crd.GetName(), err)
		}
		crds = append(crds, crd.GetName())
	}
	eventually(b, "Velero's CRDs established", time.Minute, func() (bool, string) {
		for _, name := range crds {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			if err := c.client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
				return false, err.Error()
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			established := false
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				established = established || m["type"] == "Established" && m["status"] == "True"
			}
			if !established {
				return false, name + " not established"
			}
		}
		return true, ""
	})
	labels := map[string]string{"component": "velero"}
	c.create(b, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "velero"}},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "velero", Namespace: "velero"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr[int32](0),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "velero", Image: "velero/velero:" + v.version}}},
				},
			},
		})
	bsl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
		"metadata": map[string]any{"name": "default", "namespace": "velero"},
		"spec": map[string]any{
			"provider":      "velero.io/aws",
			"default":       true,
			"objectStorage": map[string]any{"bucket": bucket},
			"config":        map[string]any{"region": "minio", "s3Url": minio.Endpoint, "s3ForcePathStyle": "true"},
		},
	}}
	c.create(b, bsl)
}

// veleroTurn is held by the one Velero server running: its controller
// manager serves metrics on :8080 whatever its flags say, so a second one
// started by a parallel test failed to bind it and exited.
var veleroTurn = make(chan struct{}, 1)

// startVelero runs Velero's server outside the cluster, as Salvor's runs in
// these benchmarks, and waits until its location is Available. It waits
// for any other test's Velero server to stop first.
func (c *cluster) startVelero(b testing.TB, v velero, minio *testbed.MinIO, extra ...string) *server {
	b.Helper()
	logs := filepath.Join(b.TempDir(), "velero.log")
	f, err := os.Create(logs)
	if err != nil {
		b.Fatal(err)
	}
	args := append([]string{"server", "--kubeconfig", c.kubeconfig, "--namespace", "velero", "--plugin-dir", v.plugins,
		"--metrics-address", freeAddress(b), "--profiler-address", freeAddress(b), "--log-level", "info"}, extra...)
	cmd := exec.Command(v.bin, args...)
	cmd.Env = append(os.Environ(), "AWS_SHARED_CREDENTIALS_FILE="+minio.CredentialsFile(b), "HOME="+b.TempDir())
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	veleroTurn <- struct{}{}
	release := func() { <-veleroTurn }
	if err := cmd.Start(); err != nil {
		release()
		b.Fatal(err)
	}
	s := &server{cmd: cmd, logs: logs, release: release}
	b.Cleanup(func() {
		s.stop()
		f.Close()
		if b.Failed() {
			out, _ := os.ReadFile(logs)
			b.Logf("velero server log:\n%s", tail(string(out), 60))
		}
	})
	dyn := c.dynamic(b)
	eventually(b, "Velero's location Available", 2*time.Minute, func() (bool, string) {
		if cmd.ProcessState != nil {
			return false, "velero server exited"
		}
		bsl, err := dyn.Resource(veleroBSLs).Namespace("velero").Get(context.Background(), "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		phase, _, _ := unstructured.NestedString(bsl.Object, "status", "phase")
		msg, _, _ := unstructured.NestedString(bsl.Object, "status", "message")
		return phase == "Available", phase + " " + msg
	})
	return s
}

// freeAddress is a loopback address with a port nothing listens on now.
func freeAddress(b testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (c *cluster) dynamic(b testing.TB) dynamic.Interface {
	dyn, err := dynamic.NewForConfig(c.restConfig)
	if err != nil {
		b.Fatal(err)
	}
	return dyn
}

// watchObject follows one object through a watch until done says so.
func (c *cluster) watchObject(b testing.TB, gvr schema.GroupVersionResource, ns, name string, done func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	b.Helper()
	dyn := c.dynamic(b)
	// A test's Velero backup or restore takes a minute or two here; one
	// that hangs (Velero 1.18's data mover waiting on a DataUpload its
	// node agent left Prepared) fails its test within ten minutes instead
	// of holding veleroTurn, and every other Velero test with it, until
	// the binary's timeout. A benchmark's may take hours.
	bound := 10 * time.Minute
	if _, ok := b.(*testing.B); ok {
		bound = 2 * time.Hour
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for ctx.Err() == nil {
		w, err := dyn.Resource(gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			b.Fatal(err)
		}
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type != watch.Error && ev.Type != watch.Deleted && done(u) {
				w.Stop()
				return u
			}
		}
	}
	b.Fatalf("%s %s/%s did not finish within %s", gvr.Resource, ns, name, bound)
	return nil
}

// treeMemory samples, every 100 ms until stop, the proportional set size
// (PSS) of a server and every process below it (its plugins, which Velero
// starts and stops around each backup and restore), and keeps the highest
// sum. PSS counts a page shared by several processes (a binary's text, mapped
// by the server and its plugin processes) once in all, not once in each, so
// two tools with different process layouts compare fairly.
type treeMemory struct {
	stopOnce func()
	done     chan struct{}
	peak     int64 // KiB
}

func sampleTree(pid int) *treeMemory {
	m := &treeMemory{done: make(chan struct{})}
	stop := make(chan struct{})
	var once sync.Once
	m.stopOnce = func() { once.Do(func() { close(stop) }) }
	go func() {
		defer close(m.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			var sum int64
			for _, p := range append(descendants(pid), pid) {
				sum += pss(p)
			}
			m.peak = max(m.peak, sum)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

// stop ends the sampling and returns the peak, in KiB.
func (m *treeMemory) stop() int64 {
	m.stopOnce()
	<-m.done
	return m.peak
}

// descendants lists the processes below pid.
func descendants(pid int) []int {
	children := map[int][]int{}
	for _, p := range processes() {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// pss reads a process's proportional set size in KiB (0 once it is gone).
func pss(pid int) int64 { return procKiB(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:") }

// sideBySide is one tool's figures in BenchmarkBesideVelero.
type sideBySide struct {
	tool                 string
	backup, restore      float64 // seconds
	backupRSS, backupMem int64   // KiB: the server's peak RSS; the sampled peak PSS of it and its plugins
	restoreRSS, restMem  int64
}

// salvorJobs backs up the n benchmark ConfigMaps with Salvor and restores
// them into new namespaces (ConfigMaps only), each job on a fresh server so
// every peak is that job's, timed from submitting the Backup or Restore to
// seeing it finished through a watch.
func (c *cluster) salvorJobs(b *testing.B, minio *testbed.MinIO, bucket string, n int) sideBySide {
	sv := sideBySide{tool: "Salvor"}
	s := c.startServer(b, "--plugin-dir", b.TempDir())
	c.s3Location(b, minio, "primary", bucket, true)
	mem := sampleTree(s.cmd.Process.Pid)
	start := time.Now()
	c.mustSalvor(b, "backup", "create", "side", "--include-namespaces", benchNamespaces(n))
	bk := &salvorv1.Backup{}
	c.watchUntil(b, &salvorv1.BackupList{}, "side", func(o runtime.Object) bool {
		bk = o.(*salvorv1.Backup)
		return finished(bk.Status.Phase)
	})
	sv.backup = time.Since(start).Seconds()
	sv.backupMem, sv.backupRSS = mem.stop(), rssPeak(s.cmd.Process.Pid)
	if bk.Status.Phase != salvorv1.BackupPhaseCompleted || bk.Status.Progress.ItemsBackedUp < n {
		b.Fatalf("Salvor's backup ended %s with %+v: %s", bk.Status.Phase, bk.Status.Progress, bk.Status.FailureReason)
	}
	s.stop()
	s = c.startServer(b, "--plugin-dir", b.TempDir())
	c.waitLocation(b, "primary", salvorv1.BackupStorageLocationPhaseAvailable)
	mem = sampleTree(s.cmd.Process.Pid)
	start = time.Now()
	c.mustSalvor(b, "restore", "create", "side", "--from-backup", "side", "--include-resources", "configmaps",
		"--namespace-mappings", strings.Join(benchMappings(n, "salvor"), ","))
	rs := c.watchRestoreEnd(b, "side")
	sv.restore = time.Since(start).Seconds()
	sv.restMem, sv.restoreRSS = mem.stop(), rssPeak(s.cmd.Process.Pid)
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Progress.ItemsRestored != n {
		b.Fatalf("Salvor's restore ended %s with %+v: %s", rs.Status.Phase, rs.Status.Progress, rs.Status.FailureReason)
	}
	s.stop()
	c.countRestored(b, "salvor", n)
	return sv
}

// countRestored checks that a restore into prefix-<i> made all n ConfigMaps.
func (c *cluster) countRestored(b *testing.B, prefix string, n int) {
	count := 0
	for i := range benchNS(n) {
		list := &corev1.ConfigMapList{}
		if err := c.client.List(context.Background(), list, client.InNamespace(fmt.Sprintf("%s-%d", prefix, i))); err != nil {
			b.Fatal(err)
		}
		count += len(list.Items)
	}
	if count != n {
		b.Fatalf("the restore into %s-* made %d ConfigMaps, want %d", prefix, count, n)
	}
}

// BenchmarkScale backs up and restores N ConfigMaps (SALVOR_BENCH_ITEMS)
// with Salvor alone, on fresh servers: `SALVOR_BENCH_ITEMS=300000 make bench`
// measures 300,000 across 100 namespaces, the size of the Velero report
// (vmware-tanzu/velero#9169) whose backup took 6 hours.
func BenchmarkScale(b *testing.B) {
	n := benchItems(b)
	c := startCluster(b)
	minio := testbed.StartMinIO(b, "salvor")
	populate(b, c, n)
	sv := c.salvorJobs(b, minio, "salvor", n)
	b.ReportMetric(sv.backup, "backup-s")
	b.ReportMetric(float64(n)/sv.backup, "backup-items/s")
	b.ReportMetric(float64(sv.backupRSS)/1024, "backup-peak-RSS-MiB")
	b.ReportMetric(sv.restore, "restore-s")
	b.ReportMetric(float64(n)/sv.restore, "restore-items/s")
	b.ReportMetric(float64(sv.restoreRSS)/1024, "restore-peak-RSS-MiB")
	printSideBySide(n, sv)
}

// veleroItems is how many ConfigMaps BenchmarkBesideVelero uses:
// SALVOR_BENCH_VELERO_ITEMS, default 10,000 (Velero restores about 50 a
// second here, so its restore of 10,000 takes minutes; of 300,000, hours).
func veleroItems(b *testing.B) int { return testbin.EnvCount(b, "SALVOR_BENCH_VELERO_ITEMS", 10000) }

// BenchmarkBesideVelero backs up N ConfigMaps (SALVOR_BENCH_VELERO_ITEMS) of
// about 1 KiB and restores them into new namespaces (ConfigMaps only),
// first with Salvor's server, then with Velero's (v1.18, with its AWS
// plugin), on the same control plane, the same MinIO and the same objects.
// Each backup and each restore starts on a fresh server, so every peak is
// that one job's. Times run from submitting the Backup or Restore to seeing
// it finished through a watch. It prints one table.
func BenchmarkBesideVelero(b *testing.B) {
	n := veleroItems(b)
	v := buildVelero(b)
	c := startCluster(b)
	minio := testbed.StartMinIO(b, "salvor", "velero")
	populate(b, c, n)
	sv := c.salvorJobs(b, minio, "salvor", n)

	// Velero.
	vv := sideBySide{tool: "Velero " + v.version}
	c.installVelero(b, v, minio, "velero")
	vs := c.startVelero(b, v, minio)
	dyn := c.dynamic(b)
	mem := sampleTree(vs.cmd.Process.Pid)
	backup := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "velero.io/v1", "kind": "Backup",
		"metadata": map[string]any{"name": "side", "namespace": "velero"},
		"spec": map[string]any{
			"includedNamespaces": toAny(strings.Split(benchNamespaces(n), ",")),
			"storageLocation":    "default",
			"snapshotVolumes":    false,
		},
	}}
	start := time.Now()
	if _, err := dyn.Resource(veleroBackups).Namespace("velero").Create(context.Background(), backup, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	vb := c.watchObject(b, veleroBackups, "velero", "side", veleroEnded)
	vv.backup = time.Since(start).Seconds()
	vv.backupMem, vv.backupRSS = mem.stop(), rssPeak(vs.cmd.Process.Pid)
	if phase, _, _ := unstructured.NestedString(vb.Object, "status", "phase"); phase != "Completed" {
		b.Fatalf("Velero's backup ended %s: %v", phase, vb.Object["status"])
	}
	if done, _, _ := unstructured.NestedInt64(vb.Object, "status", "progress", "itemsBackedUp"); done < int64(n) {
		b.Fatalf("Velero backed up %d items, want at least %d", done, n)
	}
	vs.stop()
	vs = c.startVelero(b, v, minio)
	mem = sampleTree(vs.cmd.Process.Pid)
	mapping := map[string]any{}
	for _, m := range benchMappings(n, "velero") {
		from, to, _ := strings.Cut(m, ":")
		mapping[from] = to
	}
	restore := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "velero.io/v1", "kind": "Restore",
		"metadata": map[string]any{"name": "side", "namespace": "velero"},
		"spec": map[string]any{
			"backupName":        "side",
			"includedResources": []any{"configmaps"},
			"namespaceMapping":  mapping,
		},
	}}
	start = time.Now()
	if _, err := dyn.Resource(veleroRestores).Namespace("velero").Create(context.Background(), restore, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	vr := c.watchObject(b, veleroRestores, "velero", "side", veleroEnded)
	vv.restore = time.Since(start).Seconds()
	vv.restMem, vv.restoreRSS = mem.stop(), rssPeak(vs.cmd.Process.Pid)
	if phase, _, _ := unstructured.NestedString(vr.Object, "status", "phase"); phase != "Completed" {
		b.Fatalf("Velero's restore ended %s: %v", phase, vr.Object["status"])
	}
	vs.stop()
	c.countRestored(b, "velero", n)

	b.ReportMetric(sv.backup, "salvor-backup-s")
	b.ReportMetric(vv.backup, "velero-backup-s")
	b.ReportMetric(vv.backup/sv.backup, "x-backup")
	b.ReportMetric(sv.restore, "salvor-restore-s")
	b.ReportMetric(vv.restore, "velero-restore-s")
	b.ReportMetric(vv.restore/sv.restore, "x-restore")
	printSideBySide(n, sv, vv)
}

// printSideBySide prints the figures of each tool as a Markdown table, and
// with two tools a row of the first's ratio to the second.
func printSideBySide(n int, tools ...sideBySide) {
	mib := func(kib int64) string { return fmt.Sprintf("%.0f MiB", float64(kib)/1024) }
	rate := func(s float64) string { return fmt.Sprintf("%.0f", float64(n)/s) }
	fmt.Printf("| N | tool | backup | items/s | memory: server + plugins (peak PSS) | server peak RSS | restore | items/s | memory: server + plugins (peak PSS) | server peak RSS |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range tools {
		fmt.Printf("| %d | %s | %.2f s | %s | %s | %s | %.2f s | %s | %s | %s |\n", n, r.tool,
			r.backup, rate(r.backup), mib(r.backupMem), mib(r.backupRSS),
			r.restore, rate(r.restore), mib(r.restMem), mib(r.restoreRSS))
	}
	if len(tools) == 2 {
		sv, vv := tools[0], tools[1]
		fmt.Printf("| %d | %s / %s | %.2fx the time | %.1fx | %.2fx | %.2fx | %.2fx the time | %.1fx | %.2fx | %.2fx |\n", n, sv.tool, vv.tool,
			sv.backup/vv.backup, vv.backup/sv.backup, ratio(sv.backupMem, vv.backupMem), ratio(sv.backupRSS, vv.backupRSS),
			sv.restore/vv.restore, vv.restore/sv.restore, ratio(sv.restMem, vv.restMem), ratio(sv.restoreRSS, vv.restoreRSS))
	}
}

func ratio(a, b int64) float64 { return float64(a) / float64(b) }

func veleroEnded(u *unstructured.Unstructured) bool {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	switch phase {
	case "Completed", "PartiallyFailed", "Failed", "FailedValidation":
		return true
	}
	return false
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
