package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/restore"
	"github.com/salvor-dev/salvor/internal/testbed"
	"github.com/salvor-dev/salvor/internal/testbin"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// benchItems is how many ConfigMaps BenchmarkBackup backs up:
// SALVOR_BENCH_ITEMS, default 10000.
func benchItems(b *testing.B) int { return testbin.EnvCount(b, "SALVOR_BENCH_ITEMS", 10000) }

// BenchmarkBackup backs up N ConfigMaps of about 1 KiB in 10 namespaces, on
// the testbed, with no plugins and with two BackupItemActions (the v1
// backup-action and v2 async-backup-action examples), and reports items/s,
// the server's peak RSS, and a bare paginated LIST of the same objects.
// Each variant backs up SALVOR_BENCH_REPEAT times (3 unless set) and
// reports the median: one backup of N items on a shared 2-core machine
// varies by a third from one run to the next.
func BenchmarkBackup(b *testing.B) {
	n := benchItems(b)
	repeat := testbin.EnvCount(b, "SALVOR_BENCH_REPEAT", 3)
	c := startCluster(b)
	minio := testbed.StartMinIO(b, "backups")
	populate(b, c, n)

	list := bareList(b, c)
	// A fresh variant starts a new server for each of its backups, whose
	// first backup pays for its first discovery, plugin calls and
	// connections; a warm-server variant backs up again and again on the
	// server of the variant before it. The first backup also pays for the
	// API server's own first LISTs.
	parent := b
	var s *server
	for _, variant := range []struct {
		name     string
		plugins  string
		location []string
		warm     bool
	}{{"no-plugins", b.TempDir(), nil, false}, {"encrypted", b.TempDir(), []string{"--encryption-key-secret", "bench-keys"}, false},
		{"no-plugins-again", b.TempDir(), nil, false}, {"warm-server", "", nil, true}, {"two-actions", pluginDir, nil, false},
		{"two-actions-warm-server", "", nil, true}} {
		plugins := variant.plugins
		if !variant.warm {
			s = restart(parent, c, s, plugins)
		}
		b.Run(variant.name, func(b *testing.B) {
			loc := "loc-" + variant.name
			c.s3Location(b, minio, loc, "backups", false, variant.location...)
			var took []float64
			for i := range repeat {
				if i > 0 && !variant.warm {
					// The parent benchmark owns the server: the warm
					// variant after this one goes on with it.
					s = restart(parent, c, s, plugins)
				}
				took = append(took, c.timedBackup(b, fmt.Sprintf("bench-%s-%d", variant.name, i), loc, n))
			}
			sort.Float64s(took)
			median := took[len(took)/2]
			peak := rssPeak(s.cmd.Process.Pid) // the high-water mark of the server's life
			b.ReportMetric(median, "backup-s")
			b.ReportMetric(took[0], "fastest-s")
			b.ReportMetric(took[len(took)-1], "slowest-s")
			b.ReportMetric(list.Seconds(), "list-s")
			b.ReportMetric(float64(n)/median, "items/s")
			b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
			b.ReportMetric(median/list.Seconds(), "x-list")
		})
	}
	s.stop()
}

// restart stops the benchmark's server, if any, and starts one with the
// plugins of dir.
func restart(b *testing.B, c *cluster, s *server, dir string) *server {
	if s != nil {
		s.stop()
	}
	return c.startServer(b, append([]string{"--plugin-dir", dir}, serverArgs()...)...)
}

// timedBackup backs up the benchmark's namespaces to loc and returns the
// seconds from submitting the Backup to being told, through a watch, that
// it finished (status timestamps have 1 s resolution).
func (c *cluster) timedBackup(b *testing.B, name, loc string, n int) float64 {
	start := time.Now()
	c.mustSalvor(b, "backup", "create", name, "--storage-location", loc, "--include-namespaces", benchNamespaces(n))
	final := &salvorv1.Backup{}
	c.watchUntil(b, &salvorv1.BackupList{}, name, func(o runtime.Object) bool {
		final = o.(*salvorv1.Backup)
		return finished(final.Status.Phase)
	})
	took := time.Since(start).Seconds()
	if final.Status.Phase != salvorv1.BackupPhaseCompleted || final.Status.Progress.ItemsBackedUp < n {
		b.Fatalf("backup %s ended %s with %+v: %s", name, final.Status.Phase, final.Status.Progress, final.Status.FailureReason)
	}
	return took
}

// watchUntil follows the named object of list's kind in the salvor
// namespace through a watch until done says it is there: the benchmark
// learns of the change when the API server reports it, not at the next poll.
func (c *cluster) watchUntil(b testing.TB, list client.ObjectList, name string, done func(runtime.Object) bool) {
	b.Helper()
	wc, err := client.NewWithWatch(c.restConfig, client.Options{Scheme: c.client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for ctx.Err() == nil {
		// A watch the server ends (they are bounded in time) is opened
		// again; a new one starts with the object as it is.
		w, err := wc.Watch(ctx, list, client.InNamespace("salvor"), client.MatchingFields{"metadata.name": name})
		if err != nil {
			b.Fatal(err)
		}
		for ev := range w.ResultChan() {
			if ev.Type != watch.Error && ev.Type != watch.Deleted && done(ev.Object) {
				w.Stop()
				return
			}
		}
	}
	b.Fatalf("%s did not finish within an hour", name)
}

func finished(p salvorv1.BackupPhase) bool {
	switch p {
	case salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseFailedValidation:
		return true
	}
	return false
}

// benchNS is how many namespaces n benchmark items are spread over: 10, or
// one per 3,000 items up to 100 (300,000 items: 100 namespaces).
func benchNS(n int) int { return min(max(n/3000, 10), 100) }

// benchNamespaces lists the namespaces of n benchmark items, for
// --include-namespaces.
func benchNamespaces(n int) string {
	var ns []string
	for i := range benchNS(n) {
		ns = append(ns, fmt.Sprintf("bench-%d", i))
	}
	return strings.Join(ns, ",")
}

// benchMappings maps each namespace of n benchmark items to prefix-<i>.
func benchMappings(n int, prefix string) []string {
	var m []string
	for i := range benchNS(n) {
		m = append(m, fmt.Sprintf("bench-%d:%s-%d", i, prefix, i))
	}
	return m
}

// populate creates n ConfigMaps of about 1 KiB, 16 at a time.
func populate(b *testing.B, c *cluster, n int) {
	ctx := context.Background()
	for i := range benchNS(n) {
		if err := c.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
	payload := strings.Repeat("x", 900)
	start := time.Now()
	c.createMany(b, n, func(i int) client.Object {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%07d", i), Namespace: fmt.Sprintf("bench-%d", i%benchNS(n))},
			Data:       map[string]string{"payload": payload},
		}
	})
	b.Logf("created %d config maps in %s", n, time.Since(start).Round(time.Millisecond))
}

// bareList times a paginated LIST of every ConfigMap (pages of 500, as a
// backup reads them) from Go, each page read whole but not decoded beyond
// its items and continue token, uncompressed as the server asks for it: the
// floor a backup's reading cannot go under. The best of three runs after a
// first one that warms the API server's cache.
func bareList(b *testing.B, c *cluster) time.Duration {
	// The server's own JSON client, uncompressed as the server sets it.
	cfg := rest.CopyConfig(c.restConfig)
	cfg.DisableCompression = true
	rc, err := restore.NewCreateClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var best time.Duration
	for run := range 4 {
		start := time.Now()
		count, cont := 0, ""
		for {
			req := rc.Get().AbsPath("/api/v1/configmaps").Param("limit", "500")
			if cont != "" {
				req = req.Param("continue", cont)
			}
			body, err := req.Do(context.Background()).Raw()
			if err != nil {
				b.Fatal(err)
			}
			var page struct {
				Metadata struct {
					Continue string `json:"continue"`
				} `json:"metadata"`
				Items []json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				b.Fatal(err)
			}
			count += len(page.Items)
			if cont = page.Metadata.Continue; cont == "" {
				break
			}
		}
		took := time.Since(start)
		b.Logf("paginated LIST %d of %d config maps: %s", run, count, took.Round(time.Millisecond))
		if run > 0 && (best == 0 || took < best) {
			best = took
		}
	}
	return best
}

// rssPeak reads a process's peak resident set (VmHWM) in KiB.
func rssPeak(pid int) int64 { return procKiB(fmt.Sprintf("/proc/%d/status", pid), "VmHWM:") }

// procKiB reads the figure (in KiB) of the line starting with field in a
// /proc file; 0 when the process is gone.
func procKiB(path, field string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			if f := strings.Fields(v); len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// cpuSeconds is the user+system CPU time a process has used so far.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces; the fields after it are plain.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	user, _ := strconv.ParseFloat(f[11], 64)
	sys, _ := strconv.ParseFloat(f[12], 64)
	return (user + sys) / 100 // USER_HZ is 100 on Linux
}

// childPID finds this process's child running the named command (the
// control plane envtest started), or 0.
func childPID(comm string) int {
	for _, p := range processes() {
		if p.comm == comm && p.ppid == os.Getpid() {
			return p.pid
		}
	}
	return 0
}

// proc is a process as /proc/<pid>/stat shows it.
type proc struct {
	pid, ppid int
	comm      string
}

// processes lists the machine's processes.
func processes() []proc {
	var out []proc
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The command name may hold spaces and parentheses; it ends at the
		// last ')'.
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		if f := strings.Fields(s[end+1:]); len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			out = append(out, proc{pid: pid, ppid: ppid, comm: s[open+1 : end]})
		}
	}
	return out
}

// BenchmarkRestore creates N ConfigMaps of about 1 KiB in 10 namespaces one
// at a time with one client (the serial baseline), backs them up, and
// restores them into 10 other namespaces; it reports the restore's items/s,
// its speed-up over the serial creates, and the server's peak RSS.
func BenchmarkRestore(b *testing.B) {
	n := benchItems(b)
	c := startCluster(b)
	minio := testbed.StartMinIO(b, "backups", "sealed")
	ctx := context.Background()
	for i := range benchNS(n) {
		if err := c.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
	// The serial creates and the server authenticate with a service
	// account's token, as an installed server does: the API server checks
	// a client certificate on every request (an ECDSA verification, a
	// tenth of its CPU per create here) but a token once in a while.
	c.create(b, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "salvor"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "salvor-bench"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "bench", Namespace: "salvor"}}})
	sa := c.asServiceAccount(b, "salvor", "bench")
	payload := strings.Repeat("x", 900)
	apiserver, etcd := childPID("kube-apiserver"), childPID("etcd")
	if apiserver == 0 || etcd == 0 {
		b.Fatalf("control plane processes not found: kube-apiserver %d, etcd %d", apiserver, etcd)
	}
	serialCPU := cpuSeconds(apiserver)
	start := time.Now()
	for i := range n {
		if err := sa.client.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%07d", i), Namespace: fmt.Sprintf("bench-%d", i%benchNS(n))},
			Data:       map[string]string{"payload": payload},
		}); err != nil {
			b.Fatal(err)
		}
	}
	serial := time.Since(start)
	serialRate := float64(n) / serial.Seconds()
	serialCPU = cpuSeconds(apiserver) - serialCPU

	s := sa.startServer(b, append([]string{"--plugin-dir", b.TempDir()}, serverArgs()...)...)
	c.s3Location(b, minio, "primary", "backups", true)
	c.mustSalvor(b, "backup", "create", "src", "--include-namespaces", benchNamespaces(n), "--wait")
	// A fresh server for the restore, so its peak RSS is the restore's and
	// not the backup's.
	s.stop()
	s = sa.startServer(b, append([]string{"--plugin-dir", b.TempDir()}, serverArgs()...)...)
	mappings := benchMappings(n, "copy")
	start = time.Now()
	restoreCPU, serverCPU, etcdCPU := cpuSeconds(apiserver), cpuSeconds(s.cmd.Process.Pid), cpuSeconds(etcd)
	c.mustSalvor(b, "restore", "create", "copy", "--from-backup", "src", "--include-resources", "configmaps",
		"--namespace-mappings", strings.Join(mappings, ","))
	rs := c.watchRestoreEnd(b, "copy")
	peak := rssPeak(s.cmd.Process.Pid) // a fresh server: the restore's high-water mark
	took := time.Since(start).Seconds()
	restoreCPU = cpuSeconds(apiserver) - restoreCPU
	serverCPU = cpuSeconds(s.cmd.Process.Pid) - serverCPU
	etcdCPU = cpuSeconds(etcd) - etcdCPU
	// Warnings too: an item found already there counts as restored.
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Progress.ItemsRestored != n || rs.Status.Warnings != 0 {
		b.Fatalf("restore ended %s with %+v, %d warnings: %s", rs.Status.Phase, rs.Status.Progress, rs.Status.Warnings, rs.Status.FailureReason)
	}
	rate := float64(n) / took
	b.ReportMetric(took, "restore-s")
	b.ReportMetric(rate, "items/s")
	b.ReportMetric(serialRate, "serial-creates/s")
	b.ReportMetric(rate/serialRate, "x-serial")
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
	// Where the CPU went: the API server's cost of one create, serially
	// and during the restore, and Salvor's own cost of one item.
	b.ReportMetric(serialCPU/float64(n)*1e6, "apiserver-serial-cpu-us/item")
	b.ReportMetric(restoreCPU/float64(n)*1e6, "apiserver-restore-cpu-us/item")
	b.ReportMetric(serverCPU/float64(n)*1e6, "salvor-cpu-us/item")
	b.ReportMetric(etcdCPU/float64(n)*1e6, "etcd-restore-cpu-us/item")

	// The same restore as a dry run, into 10 empty namespaces: every item
	// is sent to the API server as a dry-run create (validated, admitted,
	// not stored).
	dryMappings := benchMappings(n, "dry")
	for i := range benchNS(n) {
		if err := c.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dry-%d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
	start = time.Now()
	c.mustSalvor(b, "restore", "create", "dry", "--from-backup", "src", "--include-resources", "configmaps",
		"--namespace-mappings", strings.Join(dryMappings, ","), "--dry-run")
	rs = c.watchRestoreEnd(b, "dry")
	dry := time.Since(start).Seconds()
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.DryRun == nil || rs.Status.DryRun.WouldCreate != n {
		b.Fatalf("dry run ended %s with %+v: %s", rs.Status.Phase, rs.Status.DryRun, rs.Status.FailureReason)
	}
	b.ReportMetric(dry, "dry-run-s")
	b.ReportMetric(took/dry, "x-dry-run-vs-restore")

	// The same restore from an encrypted location (its backup made there).
	c.s3Location(b, minio, "sealed", "sealed", false, "--prefix", "sealed", "--encryption-key-secret", "bench-keys")
	c.mustSalvor(b, "backup", "create", "src-sealed", "--storage-location", "sealed", "--include-namespaces", benchNamespaces(n), "--wait")
	sealedMappings := benchMappings(n, "sealed")
	start = time.Now()
	c.mustSalvor(b, "restore", "create", "unsealed", "--from-backup", "src-sealed", "--include-resources", "configmaps",
		"--namespace-mappings", strings.Join(sealedMappings, ","))
	rs = c.watchRestoreEnd(b, "unsealed")
	sealed := time.Since(start).Seconds()
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Progress.ItemsRestored != n {
		b.Fatalf("encrypted restore ended %s with %+v: %s", rs.Status.Phase, rs.Status.Progress, rs.Status.FailureReason)
	}
	b.ReportMetric(sealed, "encrypted-restore-s")
	b.ReportMetric(sealed/took, "x-encrypted-vs-plain-restore")
}

// serverArgs passes SALVOR_BENCH_SERVER_ARGS (space-separated) to the
// benchmarks' servers, e.g. --profiling-address to profile one.
func serverArgs() []string { return strings.Fields(os.Getenv("SALVOR_BENCH_SERVER_ARGS")) }

// watchRestoreEnd follows a restore through a watch until it has ended.
func (c *cluster) watchRestoreEnd(b testing.TB, name string) *salvorv1.Restore {
	rs := &salvorv1.Restore{}
	c.watchUntil(b, &salvorv1.RestoreList{}, name, func(o runtime.Object) bool {
		rs = o.(*salvorv1.Restore)
		switch rs.Status.Phase {
		case salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed, salvorv1.RestorePhaseFailedValidation:
			return true
		}
		return false
	})
	return rs
}
