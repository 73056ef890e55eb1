package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func opMap(seconds string, fail bool) map[string]string {
	m := map[string]string{"example.io/operation-seconds": seconds}
	if fail {
		m["example.io/operation-fail"] = "true"
	}
	return m
}

func storedOps(t *testing.T, cfg map[string]string, backup string) []itemoperation.BackupOperation {
	t.Helper()
	var ops []itemoperation.BackupOperation
	if err := openStore(t, cfg).GetItemOperations(context.Background(), backup, &ops); err != nil {
		t.Fatal(err)
	}
	return ops
}

func TestOperationsCompleteFailAndFinalize(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--item-operation-sync-frequency", "1s")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "quick", Namespace: "ops", Annotations: opMap("4", false)}, Data: map[string]string{"version": "1"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "failing", Namespace: "ops", Annotations: opMap("2", true)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "long", Namespace: "ops", Annotations: opMap("30", false)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "ops"}})
	c.mustSalvor(t, "backup", "create", "ops", "--include-namespaces", "ops")
	c.waitBackup(t, "ops", salvorv1.BackupPhaseWaitingForPluginOperations)

	// While it waits: the describe output says on what, and the item the
	// operation will back up again changes.
	desc := c.mustSalvor(t, "backup", "describe", "ops", "--details")
	for _, w := range []string{"Phase:        WaitingForPluginOperations", "Item operations: ", "of 3 completed",
		"Waiting for:  example.io/async-operation", "configmaps ops/quick", "seconds"} {
		if !strings.Contains(desc, w) {
			t.Errorf("describe while waiting lacks %q:\n%s", w, desc)
		}
	}
	// describe --details shows each running operation's progress as of
	// the last poll (the Backup's status), ahead of the location's record,
	// which is written when an operation changes phase: once the others
	// have ended, the long one's record stays where it was while the
	// progress describe shows goes on (seen to grow, beyond the record).
	row := regexp.MustCompile(`configmaps ops/long +\S+ +InProgress +(\d+) of 30 seconds`)
	var shown []int
	eventually(t, "describe --details showing the long operation's live progress, ahead of the location's record", 40*time.Second, func() (bool, string) {
		desc := c.mustSalvor(t, "backup", "describe", "ops", "--details")
		m := row.FindStringSubmatch(desc)
		if m == nil {
			return false, fmt.Sprintf("shown so far %v; now:\n%s", shown, desc)
		}
		now, _ := strconv.Atoi(m[1])
		recorded := int64(-1)
		for _, op := range storedOps(t, cfg, "ops") {
			if op.Spec.ResourceIdentifier.Name == "long" {
				recorded = op.Status.NCompleted
			}
		}
		if int64(now) > recorded && (len(shown) == 0 || now > shown[len(shown)-1]) {
			shown = append(shown, now)
		}
		return len(shown) >= 2, fmt.Sprintf("describe showed %v, now %d; the location records %d", shown, now, recorded)
	})
	quick := &corev1.ConfigMap{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "ops", Name: "quick"}, quick); err != nil {
		t.Fatal(err)
	}
	quick.Data["version"] = "2"
	if err := c.client.Update(context.Background(), quick); err != nil {
		t.Fatal(err)
	}
	// Not whole yet: no metadata in the location.
	if names, _ := openStore(t, cfg).ListBackups(context.Background()); contains(names, "ops") {
		t.Error("a backup waiting for operations already looks whole in its location")
	}

	b := c.waitBackup(t, "ops", salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhasePartiallyFailed || b.Status.BackupItemOperationsAttempted != 3 ||
		b.Status.BackupItemOperationsCompleted != 2 || b.Status.BackupItemOperationsFailed != 1 || b.Status.Errors != 1 {
		t.Fatalf("final status %+v", b.Status)
	}
	store := openStore(t, cfg)
	items := tarball(t, store, "ops")
	if v, _, _ := unstructured.NestedString(items["configmaps/ops/quick"].Object, "data", "version"); v != "2" {
		t.Errorf("post-operation item not backed up again: version %q", v)
	}
	if items["configmaps/ops/plain"] == nil || items["configmaps/ops/failing"] == nil || items["configmaps/ops/long"] == nil {
		t.Errorf("tarball lost items: %v", keysOf(items))
	}
	results, err := store.GetResults(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	if msg := strings.Join(results.Errors.Namespaces["ops"], "\n"); !strings.Contains(msg, "configmaps ops/failing failed") ||
		!strings.Contains(msg, "operation-fail annotation asked") {
		t.Errorf("failed operation missing from results: %q", msg)
	}
	for _, op := range storedOps(t, cfg, "ops") {
		if op.Status.Phase != itemoperation.PhaseCompleted && op.Status.Phase != itemoperation.PhaseFailed {
			t.Errorf("stored operation %s still %s", op.Spec.OperationID, op.Status.Phase)
		}
		if op.Status.NTotal == 0 || op.Status.Updated == nil || op.Status.OperationUnits != "seconds" {
			t.Errorf("stored operation lacks progress: %+v", op.Status)
		}
	}
	if names, _ := store.ListBackups(context.Background()); !contains(names, "ops") {
		t.Error("finished backup has no metadata")
	}
	desc = c.mustSalvor(t, "backup", "describe", "ops", "--details")
	if !strings.Contains(desc, "Item operations: 2 of 3 completed, 1 failed, 0 in progress") || !strings.Contains(desc, "Failed") {
		t.Errorf("describe after the end:\n%s", desc)
	}
}

func TestOperationTimeoutAndUserCancel(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	c := startCluster(t)
	c.setenv("EXAMPLE_ASYNC_STATE_DIR", state)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--item-operation-sync-frequency", "1s")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "slow"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "forever", Namespace: "slow", Annotations: opMap("3600", false)}})

	c.mustSalvor(t, "backup", "create", "timeout", "--include-namespaces", "slow", "--item-operation-timeout", "3s")
	b := c.waitBackup(t, "timeout", salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhasePartiallyFailed || b.Status.BackupItemOperationsFailed != 1 {
		t.Fatalf("status after a timeout %+v", b.Status)
	}
	ops := storedOps(t, cfg, "timeout")
	if len(ops) != 1 || ops[0].Status.Error != "timed out after 3s" {
		t.Fatalf("stored operation %+v", ops)
	}
	// The plugin saw its Cancel.
	if _, err := os.Stat(filepath.Join(state, ops[0].Spec.OperationID+".cancelled")); err != nil {
		t.Errorf("the plugin was not asked to cancel the timed-out operation: %v", err)
	}
	// The log ends as the backup did, after its first pass's "waiting".
	lastLine := func(name string) string {
		lines := strings.Split(strings.TrimSpace(c.mustSalvor(t, "backup", "logs", name)), "\n")
		return lines[len(lines)-1]
	}
	if last := lastLine("timeout"); !strings.Contains(last, `"msg":"backup finished"`) || !strings.Contains(last, `"phase":"PartiallyFailed"`) ||
		!strings.Contains(last, `"operationsFailed":1`) {
		t.Errorf("the log of a backup whose operation timed out ends %q", last)
	}

	c.mustSalvor(t, "backup", "create", "usercancel", "--include-namespaces", "slow")
	c.waitBackup(t, "usercancel", salvorv1.BackupPhaseWaitingForPluginOperations)
	out := c.mustSalvor(t, "backup", "cancel", "usercancel")
	if !strings.Contains(out, `Backup "usercancel" is being cancelled`) {
		t.Errorf("cancel printed %q", out)
	}
	b = c.waitBackup(t, "usercancel", salvorv1.BackupPhaseFailed)
	if b.Status.FailureReason != "cancelled by user" {
		t.Errorf("failure reason %q", b.Status.FailureReason)
	}
	keys, err := openStore(t, cfg).ListBackups(context.Background())
	if err != nil || contains(keys, "usercancel") {
		t.Errorf("a cancelled backup looks whole: %v %v", keys, err)
	}
	if _, err := openStore(t, cfg).GetTarball(context.Background(), "usercancel"); err == nil {
		t.Error("a cancelled backup's tarball is still in the location")
	}
	if last := lastLine("usercancel"); !strings.Contains(last, `"msg":"backup failed"`) || !strings.Contains(last, `"phase":"Failed"`) ||
		!strings.Contains(last, "cancelled by user") {
		t.Errorf("the log of a backup cancelled while waiting ends %q", last)
	}
	if desc := c.mustSalvor(t, "backup", "describe", "usercancel", "--details"); !strings.Contains(desc, "the backup failed: cancelled by user") {
		t.Errorf("describe --details of a backup cancelled while waiting:\n%s", desc)
	}
	entries, _ := os.ReadDir(state)
	if len(entries) < 2 {
		t.Errorf("the plugin saw %d cancels, want one per backup", len(entries))
	}
	if out, err := c.salvor(t, "backup", "cancel", "usercancel"); err == nil || !strings.Contains(out, "has already ended") {
		t.Errorf("cancelling an ended backup: %v %s", err, out)
	}
}

func TestServerRestartWhileWaitingForOperations(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	s := c.startServer(t, "--item-operation-sync-frequency", "1s")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "resume"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: "resume", Annotations: opMap("6", false)}})
	c.mustSalvor(t, "backup", "create", "resumed", "--include-namespaces", "resume")
	c.waitBackup(t, "resumed", salvorv1.BackupPhaseWaitingForPluginOperations)
	before := storedOps(t, cfg, "resumed")
	s.kill()
	c.startServer(t, "--item-operation-sync-frequency", "1s")
	b := c.waitBackup(t, "resumed", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.BackupItemOperationsCompleted != 1 || b.Status.Attempts != 1 {
		t.Fatalf("after the restart: %+v", b.Status)
	}
	after := storedOps(t, cfg, "resumed")
	if len(after) != 1 || after[0].Spec.OperationID != before[0].Spec.OperationID {
		t.Errorf("operation changed across the restart: %v → %v", before, after)
	}
}

func TestManyOperationsAndWaitOutput(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--item-operation-sync-frequency", "1s")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "many"}})
	for i := range 200 {
		seconds := fmt.Sprint(i % 5)
		if i == 1 {
			// One outlasts the server's first polls however loaded the
			// machine, so --wait has a running operation to show: the
			// others may all be over before the first poll is written.
			seconds = "30"
		}
		c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("op-%03d", i), Namespace: "many", Annotations: opMap(seconds, i%10 == 0)}})
	}
	out, err := c.salvor(t, "backup", "create", "many", "--include-namespaces", "many", "--wait")
	if err == nil || !strings.Contains(out, "Backup many: PartiallyFailed") {
		t.Fatalf("backup create --wait: %v\n%s", err, out)
	}
	b := c.getBackup(t, "many")
	if b.Status.BackupItemOperationsAttempted != 200 || b.Status.BackupItemOperationsCompleted != 180 ||
		b.Status.BackupItemOperationsFailed != 20 || b.Status.Errors != 20 || len(b.Status.RunningOperations) != 0 {
		t.Errorf("counters %+v", b.Status)
	}
	// The --wait output shows operations advancing, and single operations.
	var completedCounts []string
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "operations: "); ok {
			completedCounts = append(completedCounts, strings.Fields(rest)[0])
		}
	}
	if len(completedCounts) < 2 || completedCounts[0] == completedCounts[len(completedCounts)-1] {
		t.Errorf("--wait did not show operations advancing: %v\n%s", completedCounts, tail(out, 40))
	}
	if !strings.Contains(out, "example.io/async-operation on configmaps many/op-") || !strings.Contains(out, " seconds ") {
		t.Errorf("--wait showed no single operation:\n%s", tail(out, 40))
	}
	ops := storedOps(t, cfg, "many")
	if len(ops) != 200 {
		t.Errorf("%d stored operations", len(ops))
	}
	if items := tarball(t, openStore(t, cfg), "many"); len(items) != 201 {
		t.Errorf("tarball holds %d items", len(items))
	}
}

func TestCancelDuringFirstPass(t *testing.T) {
	t.Parallel()
	// 12,000 items on one worker: a pass of 4,000 could end between the
	// test seeing it under way and the cancel arriving.
	c, _, cfg := slowFirstPass(t, "stopped")
	c.mustSalvor(t, "backup", "cancel", "stopped")
	b := c.waitBackup(t, "stopped", salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseCompleted)
	if b.Status.Phase != salvorv1.BackupPhaseFailed || !strings.Contains(b.Status.FailureReason, "cancelled by user") {
		t.Fatalf("status after cancel: %s %q", b.Status.Phase, b.Status.FailureReason)
	}
	if _, err := openStore(t, cfg).GetTarball(context.Background(), "stopped"); err == nil {
		t.Error("a backup cancelled in its first pass left its tarball")
	}
}

func TestPluginKilledWhileItsOperationRunsAndBackupTimeout(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	srv := c.startServer(t, "--item-operation-sync-frequency", "1s")
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "k"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: "k", Annotations: opMap("5", false)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "long", Namespace: "k", Labels: map[string]string{"which": "long"}, Annotations: opMap("3600", false)}})
	c.mustSalvor(t, "backup", "create", "survivor", "--include-namespaces", "k", "--selector", "!which")
	c.waitBackup(t, "survivor", salvorv1.BackupPhaseWaitingForPluginOperations)
	// Kill the plugin's process: the server restarts it, and the new one
	// answers for the operation the old one started. Only this server's:
	// the plugin runs in its process group, other tests' in theirs.
	kill := exec.Command("pkill", "-KILL", "-g", fmt.Sprint(srv.cmd.Process.Pid), "-f", filepath.Join(pluginDir, "async-backup-action"))
	if out, err := kill.CombinedOutput(); err != nil {
		t.Fatalf("killing the plugin: %v %s", err, out)
	}
	b := c.waitBackup(t, "survivor", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.BackupItemOperationsCompleted != 1 {
		t.Errorf("after the plugin was killed: %+v", b.Status)
	}

	// A whole-backup deadline stops a backup waiting on a long operation.
	c.mustSalvor(t, "backup", "create", "deadline", "--include-namespaces", "k", "--selector", "which=long", "--timeout", "8s")
	b = c.waitBackup(t, "deadline", salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed)
	if b.Status.Phase != salvorv1.BackupPhaseFailed || b.Status.FailureReason != "the backup timed out after 8s" {
		t.Errorf("backup with a deadline: %s %q", b.Status.Phase, b.Status.FailureReason)
	}
	// Kept by a timer, not at the next poll of the operation after the
	// deadline: the polls back off (1 s apart, then 2, 4, 8), so the one
	// after 8 s comes about 15 s in. The margin between is for a loaded
	// machine (and the timestamps' whole seconds).
	if took := b.Status.CompletionTimestamp.Sub(b.Status.StartTimestamp.Time); took > 12*time.Second {
		t.Errorf("a backup with --timeout 8s ended %s after it started: at a poll, not at its deadline", took)
	}
}
