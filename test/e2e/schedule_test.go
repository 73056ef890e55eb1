package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func (c *cluster) schedule(t testing.TB, name string) *salvorv1.Schedule {
	t.Helper()
	s := &salvorv1.Schedule{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// scheduleBackups lists a schedule's backups, oldest first.
func (c *cluster) scheduleBackups(t testing.TB, schedule string) []salvorv1.Backup {
	t.Helper()
	list := &salvorv1.BackupList{}
	if err := c.client.List(context.Background(), list, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.ScheduleNameLabel: schedule}); err != nil {
		t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// runTime is the scheduled time a scheduled backup's name carries.
func runTime(t testing.TB, schedule, backup string) time.Time {
	t.Helper()
	tm, err := time.Parse("20060102150405", strings.TrimPrefix(backup, schedule+"-"))
	if err != nil {
		t.Fatalf("backup %s of schedule %s: no run time in its name: %v", backup, schedule, err)
	}
	return tm
}

// metric reads one series' value from a server's /metrics, with a token
// allowed to read them.
func metric(t testing.TB, addr, token, series string) (float64, bool) {
	t.Helper()
	code, body := fetch(t, "https://"+addr+"/metrics", token)
	if code != http.StatusOK {
		return 0, false
	}
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// TestScheduleCadenceRetentionPauseAndRestart runs an @every 3s schedule
// with --keep-last 2, --skip-immediately and a TTL of 1s: it does not back
// up at once, keeps its pace, leaves exactly its two newest good backups in
// the cluster and the location (their TTL long passed), makes nothing while
// paused and does not fire
// at once when unpaused, and after a server outage catches up once, not in
// a burst. The last-success metric moves with each good backup.
func TestScheduleCadenceRetentionPauseAndRestart(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	c.startServer(t, "--metrics-address", metricsAddr)
	reader := c.metricsReader(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cadence"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "cadence"}, Data: map[string]string{"k": "v"}})

	// A TTL of a second: what retention keeps outlives it.
	c.mustSalvor(t, "schedule", "create", "fast", "--schedule", "@every 3s", "--include-namespaces", "cadence",
		"--keep-last", "2", "--skip-immediately", "--ttl", "1s")
	created := c.schedule(t, "fast").CreationTimestamp.Time
	seen := map[string]bool{}
	record := func() []salvorv1.Backup {
		bs := c.scheduleBackups(t, "fast")
		for _, b := range bs {
			seen[b.Name] = true
		}
		return bs
	}
	eventually(t, "the schedule's first backup", 30*time.Second, func() (bool, string) {
		return len(record()) > 0, "none yet"
	})
	first := keys(seen)[0]
	if rt := runTime(t, "fast", first); rt.Before(created.Add(2 * time.Second)) {
		t.Errorf("first backup %s runs at %s, the schedule was created at %s: --skip-immediately backed up at once", first, rt, created)
	}

	series := `salvor_schedule_last_successful_backup_timestamp_seconds{namespace="salvor",schedule="fast"}`
	var success float64
	eventually(t, "the last-success metric after a good backup", 30*time.Second, func() (bool, string) {
		v, ok := metric(t, metricsAddr, reader, series)
		success = v
		return ok && v > float64(created.Unix())+1, fmt.Sprint(v, ok)
	})
	eventually(t, "five runs", time.Minute, func() (bool, string) {
		record()
		return len(seen) >= 5, fmt.Sprint(len(seen), " runs")
	})
	if v, _ := metric(t, metricsAddr, reader, series); v <= success {
		t.Errorf("last-success metric did not move with later good backups: %v, then %v", success, v)
	}
	runs := keys(seen)
	for i := 1; i < len(runs); i++ {
		if gap := runTime(t, "fast", runs[i]).Sub(runTime(t, "fast", runs[i-1])); gap < 3*time.Second || gap%(3*time.Second) != 0 {
			t.Errorf("runs %s and %s are %s apart: the pace is every 3s", runs[i-1], runs[i], gap)
		}
	}

	c.mustSalvor(t, "schedule", "pause", "fast")
	eventually(t, "the server sees the schedule paused", 30*time.Second, func() (bool, string) {
		s := c.schedule(t, "fast")
		return s.Status.PausedAt != nil, fmt.Sprintf("%+v", s.Status)
	})
	// Retention: once the last run ends, exactly the two newest good
	// backups are left, in the cluster and in the location.
	var kept []string
	eventually(t, "exactly the two newest backups kept", time.Minute, func() (bool, string) {
		bs := record()
		kept = nil
		for _, b := range bs {
			if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.DeletionTimestamp != nil {
				return false, fmt.Sprintf("%s is %s", b.Name, b.Status.Phase)
			}
			kept = append(kept, b.Name)
		}
		all := keys(seen)
		return len(kept) == 2 && kept[0] == all[len(all)-2] && kept[1] == all[len(all)-1], fmt.Sprintf("kept %v of %v", kept, all)
	})
	eventually(t, "the location holds the same two", time.Minute, func() (bool, string) {
		names, err := openStore(t, cfg).ListBackups(context.Background())
		if err != nil {
			return false, err.Error()
		}
		var ours []string
		for _, n := range names {
			if strings.HasPrefix(n, "fast-") {
				ours = append(ours, n)
			}
		}
		sort.Strings(ours)
		return fmt.Sprint(ours) == fmt.Sprint(kept), fmt.Sprintf("location %v, cluster %v", ours, kept)
	})
	desc := words(c.mustSalvor(t, "schedule", "describe", "fast"))
	for _, w := range []string{"Phase: Enabled", "Paused: true", "Next runs: none: paused",
		"Retention: keep last 2", "kept by newest Completed, last 1", "kept by last 2", kept[0], kept[1]} {
		if !strings.Contains(desc, w) {
			t.Errorf("describe lacks %q:\n%s", w, desc)
		}
	}
	// Paused: nothing runs over two of its intervals, and the TTL of the
	// two kept does not expire them.
	holds(t, "a paused schedule keeps its 2 backups", 7*time.Second, func() (bool, string) {
		bs := c.scheduleBackups(t, "fast")
		if len(bs) != 2 {
			return false, fmt.Sprintf("%d backups", len(bs))
		}
		for _, b := range bs {
			if b.DeletionTimestamp != nil {
				return false, fmt.Sprintf("backup %s, kept by retention, is being deleted (expired %s)", b.Name, b.Status.Expiration)
			}
		}
		return true, ""
	})

	skipped := c.schedule(t, "fast").Status.SkippedRuns
	c.mustSalvor(t, "schedule", "unpause", "fast")
	unpaused := time.Now()
	var afterUnpause string
	eventually(t, "a run after unpausing", 30*time.Second, func() (bool, string) {
		for _, b := range c.scheduleBackups(t, "fast") {
			if !seen[b.Name] {
				afterUnpause = b.Name
				return true, ""
			}
		}
		return false, "none"
	})
	record()
	if rt := runTime(t, "fast", afterUnpause); rt.Before(unpaused.Add(2 * time.Second).Truncate(time.Second)) {
		t.Errorf("first run after unpausing at %s is %s: with skipImmediately it waits a whole interval", unpaused, afterUnpause)
	}
	if s := c.schedule(t, "fast"); s.Status.SkippedRuns != skipped {
		t.Errorf("unpausing counted %d skipped runs (%s)", s.Status.SkippedRuns-skipped, s.Status.LastSkipReason)
	}

	// An outage of three intervals: one catch-up run, then the pace again.
	record()
	c.killServers()
	killed := time.Now()
	record()
	last := c.schedule(t, "fast").Status
	skipped = last.SkippedRuns
	// The outage lasts until three runs were due without a server.
	eventually(t, "three runs due while the server is down", time.Minute, func() (bool, string) {
		return last.NextRun != nil && time.Now().After(last.NextRun.Add(6*time.Second+time.Second)), "not yet"
	})
	restarted := time.Now()
	before := len(seen)
	c.startServer(t)
	eventually(t, "three runs after the restart", time.Minute, func() (bool, string) {
		record()
		return len(seen) >= before+3, fmt.Sprint(keys(seen))
	})
	// Runs for times between the kill and the restart can only be the
	// new server's catch-up.
	catchUps := 0
	for _, n := range keys(seen) {
		if rt := runTime(t, "fast", n); rt.After(killed.Add(time.Second)) && rt.Before(restarted.Truncate(time.Second)) {
			catchUps++
		}
	}
	if catchUps > 1 {
		t.Errorf("%d runs were made for the times the server was down: one catch-up at most (%v)", catchUps, keys(seen))
	}
	runs = keys(seen)
	for i := 1; i < len(runs); i++ {
		if gap := runTime(t, "fast", runs[i]).Sub(runTime(t, "fast", runs[i-1])); gap < 3*time.Second {
			t.Errorf("runs %s and %s are %s apart: a burst", runs[i-1], runs[i], gap)
		}
	}
	if s := c.schedule(t, "fast"); s.Status.SkippedRuns < skipped+2 {
		t.Errorf("the runs missed during the outage are not counted as skipped: %d, then %d (%s)", skipped, s.Status.SkippedRuns, s.Status.LastSkipReason)
	}
}

// holds checks cond every 200ms for d and fails the test the first time it
// is false: for what must stay true (nothing runs while paused).
func holds(t testing.TB, what string, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	var broke string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, d, true, func(context.Context) (bool, error) {
		ok, state := cond()
		if !ok {
			broke = state
		}
		return !ok, nil
	})
	if err == nil {
		t.Fatalf("%s: broken: %s", what, broke)
	}
}

// words is s with every run of spaces one space: describe's columns
// are aligned with a width the tests need not know.
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestScheduleForbidSkipsWhileABackupIsUnfinished holds a schedule's first
// backup open with a slow plugin operation: the runs due meanwhile are
// skipped and counted, and the next backup comes once it has ended.
func TestScheduleForbidSkipsWhileABackupIsUnfinished(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--item-operation-sync-frequency", "1s")
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "slow"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: "slow", Annotations: opMap("15", false)}})

	c.mustSalvor(t, "schedule", "create", "slow", "--schedule", "@every 3s", "--include-namespaces", "slow")
	s := c.schedule(t, "slow")
	firstName := "slow-" + s.CreationTimestamp.UTC().Format("20060102150405")
	c.waitBackup(t, firstName, salvorv1.BackupPhaseWaitingForPluginOperations)
	eventually(t, "runs skipped while the first backup waits", 30*time.Second, func() (bool, string) {
		s = c.schedule(t, "slow")
		return s.Status.SkippedRuns >= 2, fmt.Sprintf("%d skipped (%s)", s.Status.SkippedRuns, s.Status.LastSkipReason)
	})
	if want := "backup " + firstName + " is unfinished (concurrencyPolicy Forbid)"; s.Status.LastSkipReason != want {
		t.Errorf("skip reason %q, want %q", s.Status.LastSkipReason, want)
	}
	if bs := c.scheduleBackups(t, "slow"); len(bs) != 1 || terminalPhase(bs[0].Status.Phase) {
		t.Fatalf("while the first backup is unfinished the schedule has %d backups (first %s)", len(bs), bs[0].Status.Phase)
	}
	c.waitBackup(t, firstName, salvorv1.BackupPhaseCompleted)
	eventually(t, "the next run once the first has ended", 30*time.Second, func() (bool, string) {
		return len(c.scheduleBackups(t, "slow")) == 2, "one backup"
	})
	second := c.scheduleBackups(t, "slow")[1]
	if gap := runTime(t, "slow", second.Name).Sub(runTime(t, "slow", firstName)); gap < 6*time.Second {
		t.Errorf("second run %s only %s after the first: runs were not skipped", second.Name, gap)
	}
	desc := words(c.mustSalvor(t, "schedule", "describe", "slow"))
	if !strings.Contains(desc, "is unfinished (concurrencyPolicy Forbid)") || !strings.Contains(desc, "Concurrency policy: Forbid") {
		t.Errorf("describe does not say why runs were skipped:\n%s", desc)
	}

	// A run of the template now, by hand; counted as the schedule's.
	c.mustSalvor(t, "schedule", "pause", "slow")
	if out, err := c.salvor(t, "backup", "create", "byhand", "--from-schedule", "slow", "--ttl", "1h"); err == nil || !strings.Contains(out, "leave out --ttl") {
		t.Errorf("--from-schedule with another option: %v\n%s", err, out)
	}
	c.mustSalvor(t, "backup", "create", "byhand", "--from-schedule", "slow")
	b := c.waitBackup(t, "byhand", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailed, salvorv1.BackupPhasePartiallyFailed)
	if b.Labels[salvorv1.ScheduleNameLabel] != "slow" || fmt.Sprint(b.Spec.IncludedNamespaces) != "[slow]" {
		t.Errorf("backup from schedule: labels %v, spec %+v", b.Labels, b.Spec)
	}
	// Without a name, as Velero's runbooks write it: SCHEDULE-<timestamp>.
	out := c.mustSalvor(t, "backup", "create", "--from-schedule", "slow")
	m := regexp.MustCompile(`Backup "(slow-\d{14})" submitted`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("backup create --from-schedule without a name:\n%s", out)
	}
	if b := c.waitBackup(t, m[1], salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailed, salvorv1.BackupPhasePartiallyFailed); b.Labels[salvorv1.ScheduleNameLabel] != "slow" {
		t.Errorf("the unnamed run %s: labels %v", m[1], b.Labels)
	}
}

// TestScheduleReplaceCancelsTheUnfinishedBackup: with concurrencyPolicy
// Replace, a run due while the last backup waits for a slow operation
// cancels that backup, saying why, and starts a new one.
func TestScheduleReplaceCancelsTheUnfinishedBackup(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--item-operation-sync-frequency", "1s")
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "swap"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: "swap", Annotations: opMap("60", false)}})

	c.mustSalvor(t, "schedule", "create", "swap", "--schedule", "@every 4s", "--include-namespaces", "swap", "--concurrency-policy", "Replace")
	first := "swap-" + c.schedule(t, "swap").CreationTimestamp.UTC().Format("20060102150405")
	b := c.waitBackup(t, first, salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed)
	if want := "cancelled: replaced by a newer run of schedule swap"; b.Status.Phase != salvorv1.BackupPhaseFailed || b.Status.FailureReason != want {
		t.Errorf("replaced backup ended %s (%q), want Failed (%q)", b.Status.Phase, b.Status.FailureReason, want)
	}
	eventually(t, "the replacing run", 30*time.Second, func() (bool, string) {
		bs := c.scheduleBackups(t, "swap")
		return len(bs) >= 2 && bs[1].Name > first, fmt.Sprint(len(bs), " backups")
	})
	if s := c.schedule(t, "swap"); s.Status.SkippedRuns != 0 {
		t.Errorf("Replace skipped %d runs (%s)", s.Status.SkippedRuns, s.Status.LastSkipReason)
	}
}

func terminalPhase(p salvorv1.BackupPhase) bool {
	switch p {
	case salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseFailedValidation:
		return true
	}
	return false
}

// veleroSchedule is a Schedule as Velero's users write it, with only its
// apiVersion changed.
const veleroSchedule = `
apiVersion: salvor.dev/v1
kind: Schedule
metadata:
  name: velero-style
  namespace: salvor
spec:
  schedule: 0 7 * * *
  useOwnerReferencesInBackup: false
  template:
    csiSnapshotTimeout: 10m0s
    defaultVolumesToFsBackup: false
    hooks: {}
    includedNamespaces:
    - team
    includedResources:
    - '*'
    labelSelector:
      matchLabels:
        app: web
    metadata:
      labels:
        team: blue
    snapshotVolumes: false
    storageLocation: primary
    ttl: 168h0m0s
    volumeSnapshotLocations:
    - default
`

// TestScheduleValidationAndVeleroYAML applies a Velero Schedule (its
// apiVersion changed) with strict field validation, as kubectl does, and
// checks that bad schedules end FailedValidation saying what to fix and
// never make a backup.
func TestScheduleValidationAndVeleroYAML(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", Labels: map[string]string{"app": "web"}}})

	// The location its template names (Velero's default one's name).
	c.mustSalvor(t, "snapshot-location", "create", "default", "--provider", "salvor.dev/local-volume", "--config", "snapshotDir="+t.TempDir())
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(veleroSchedule), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.client.Create(context.Background(), u, client.FieldValidation("Strict")); err != nil {
		t.Fatalf("a Velero Schedule with its apiVersion changed is refused: %v", err)
	}
	var s *salvorv1.Schedule
	eventually(t, "the Velero schedule enabled", 30*time.Second, func() (bool, string) {
		s = c.schedule(t, "velero-style")
		return s.Status.Phase == salvorv1.SchedulePhaseEnabled, fmt.Sprintf("%+v", s.Status)
	})
	if got := fmt.Sprint(s.Status.IgnoredFields); got != "[csiSnapshotTimeout]" {
		t.Errorf("ignored fields %s", got)
	}
	// Created without skipImmediately, it backs up at once, as Velero's do:
	// the one ConfigMap the selector picks, and its namespace.
	name := "velero-style-" + s.CreationTimestamp.UTC().Format("20060102150405")
	b := c.waitBackup(t, name, salvorv1.BackupPhaseCompleted)
	for k, v := range map[string]string{"team": "blue", salvorv1.ScheduleNameLabel: "velero-style", salvorv1.VeleroScheduleNameLabel: "velero-style"} {
		if b.Labels[k] != v {
			t.Errorf("backup label %s=%q, want %q", k, b.Labels[k], v)
		}
	}
	if b.Status.Progress == nil || b.Status.Progress.ItemsBackedUp != 2 || b.Spec.TTL.Duration != 168*time.Hour {
		t.Errorf("backup from the Velero schedule: %+v, %+v", b.Spec, b.Status.Progress)
	}

	bad := func(name string, mutate func(*salvorv1.ScheduleSpec)) *salvorv1.Schedule {
		s := &salvorv1.Schedule{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "salvor"},
			Spec: salvorv1.ScheduleSpec{Schedule: "@every 3s", Template: salvorv1.BackupSpec{IncludedNamespaces: []string{"team"}}}}
		mutate(&s.Spec)
		return s
	}
	minus := -1
	for _, tc := range []struct {
		s    *salvorv1.Schedule
		want string
	}{
		{bad("four-fields", func(s *salvorv1.ScheduleSpec) { s.Schedule = "0 2 * *" }), "spec.schedule: schedule \"0 2 * *\": expected exactly 5 fields"},
		{bad("bad-zone", func(s *salvorv1.ScheduleSpec) { s.Schedule = "CRON_TZ=Mars/Olympus 0 2 * * *" }), `unknown time zone "Mars/Olympus"`},
		{bad("negative", func(s *salvorv1.ScheduleSpec) { s.Retention = &salvorv1.Retention{KeepLast: -2, KeepFailed: &minus} }), "spec.retention.keepLast -2: must not be negative"},
		{bad("policy", func(s *salvorv1.ScheduleSpec) { s.ConcurrencyPolicy = "Sometimes" }), `spec.concurrencyPolicy "Sometimes": must be Forbid, Allow or Replace`},
		{bad("no-such-resource", func(s *salvorv1.ScheduleSpec) { s.Template.IncludedResources = []string{"nosuchthing"} }), "spec.template: includedResources"},
		{bad("no-such-location", func(s *salvorv1.ScheduleSpec) { s.Template.StorageLocation = "elsewhere" }), `spec.template: backup storage location "elsewhere" does not exist`},
		{bad("no-such-snapshot-location", func(s *salvorv1.ScheduleSpec) { s.Template.VolumeSnapshotLocations = []string{"aws-west"} }),
			`spec.template: volume snapshot location "aws-west" does not exist in namespace salvor`},
		{bad("no-such-policies", func(s *salvorv1.ScheduleSpec) {
			s.Template.ResourcePolicy = &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "nowhere"}
		}), "spec.template: spec.resourcePolicy: resource policies configmap salvor/nowhere does not exist"},
	} {
		c.create(t, tc.s)
		eventually(t, tc.s.Name+" FailedValidation", 30*time.Second, func() (bool, string) {
			got := c.schedule(t, tc.s.Name)
			return got.Status.Phase == salvorv1.SchedulePhaseFailedValidation && strings.Contains(strings.Join(got.Status.ValidationErrors, "\n"), tc.want),
				fmt.Sprintf("%s %q", got.Status.Phase, got.Status.ValidationErrors)
		})
	}
	hooks := &unstructured.Unstructured{}
	_ = yaml.Unmarshal([]byte(strings.NewReplacer("velero-style", "with-hooks", "hooks: {}", "hooks: {resources: [{name: freeze, includedResources: [configmaps], pre: [{exec: {command: [fsfreeze]}}]}]}").Replace(veleroSchedule)), &hooks.Object)
	if err := c.client.Create(context.Background(), hooks, client.FieldValidation("Strict")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a schedule with hooks FailedValidation", 30*time.Second, func() (bool, string) {
		got := c.schedule(t, "with-hooks")
		return got.Status.Phase == salvorv1.SchedulePhaseFailedValidation &&
			strings.Contains(strings.Join(got.Status.ValidationErrors, "\n"), "spec.template: hooks.resources[0] (freeze): its resources leave out pods, and hooks run only in pods"), fmt.Sprintf("%+v", got.Status)
	})
	// None of them made a backup (they would have at once).
	for _, n := range []string{"four-fields", "bad-zone", "negative", "policy", "no-such-resource", "no-such-location", "no-such-policies", "with-hooks"} {
		if bs := c.scheduleBackups(t, n); len(bs) != 0 {
			t.Errorf("invalid schedule %s made backup %s", n, bs[0].Name)
		}
	}
	if out, err := c.salvor(t, "schedule", "create", "typo", "--schedule", "0 2 * *"); err == nil || !strings.Contains(out, "want five fields") {
		t.Errorf("CLI with a bad expression: %v\n%s", err, out)
	}
	// A command line the CLI does not understand exits 2, with a suggestion.
	var exit *exec.ExitError
	if out, err := c.salvor(t, "schedule", "crate", "x"); !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(out, "Did you mean this?\n\tcreate") {
		t.Errorf("salvor schedule crate: %v\n%s", err, out)
	}
	if y := c.mustSalvor(t, "schedule", "get", "-o", "yaml"); !strings.Contains(y, "apiVersion: salvor.dev/v1") || !strings.Contains(y, "kind: Schedule") {
		t.Errorf("schedule get -o yaml has no apiVersion and kind:\n%s", y)
	}
	// --context picks a kubeconfig context, as kubectl's does: here the
	// current one points nowhere.
	kc, err := clientcmd.LoadFromFile(c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	good := kc.Contexts[kc.CurrentContext]
	kc.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: good.AuthInfo}
	kc.Contexts["real"], kc.CurrentContext = good, "nowhere"
	two := &cluster{kubeconfig: filepath.Join(t.TempDir(), "two-contexts")}
	if err := clientcmd.WriteToFile(*kc, two.kubeconfig); err != nil {
		t.Fatal(err)
	}
	if out, err := two.salvor(t, "schedule", "get"); err == nil {
		t.Errorf("the current context points nowhere, yet: %s", out)
	}
	if out := two.mustSalvor(t, "--context", "real", "schedule", "get"); !strings.Contains(out, "velero-style") {
		t.Errorf("--context real: %s", out)
	}
	if out := c.mustSalvor(t, "schedule", "get"); !strings.Contains(out, "velero-style") || !strings.Contains(out, "FailedValidation") {
		t.Errorf("schedule get:\n%s", out)
	}
}

// TestLabelsAndAnnotations: --labels and --annotations (Velero's flags)
// put them on the backup, schedule or restore made; a schedule's backups
// carry the schedule's labels and annotations, as Velero's do, and so does
// a backup run from it by hand, with its own on top.
func TestLabelsAndAnnotations(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}})
	has := func(what string, got, want map[string]string) {
		t.Helper()
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s=%q, want %q (all: %v)", what, k, got[k], v, got)
			}
		}
	}

	c.mustSalvor(t, "schedule", "create", "tagged", "--schedule", "@daily", "--include-namespaces", "app", "--labels", "team=shop", "--annotations", "owner=ops")
	var first salvorv1.Backup
	eventually(t, "the schedule's first backup", time.Minute, func() (bool, string) {
		list := c.scheduleBackups(t, "tagged")
		if len(list) == 0 {
			return false, "none"
		}
		first = list[0]
		return true, ""
	})
	has("the schedule's backup's labels", first.Labels, map[string]string{"team": "shop", salvorv1.ScheduleNameLabel: "tagged"})
	has("the schedule's backup's annotations", first.Annotations, map[string]string{"owner": "ops"})

	c.mustSalvor(t, "backup", "create", "by-hand", "--from-schedule", "tagged", "--labels", "run=manual", "--wait")
	b := c.getBackup(t, "by-hand")
	has("a backup run from the schedule", b.Labels, map[string]string{"team": "shop", "run": "manual", salvorv1.ScheduleNameLabel: "tagged"})
	has("a backup run from the schedule", b.Annotations, map[string]string{"owner": "ops"})

	c.mustSalvor(t, "backup", "create", "plain", "--include-namespaces", "app", "--labels", "a=b", "--annotations", "c=d", "--wait")
	b = c.getBackup(t, "plain")
	has("backup plain", b.Labels, map[string]string{"a": "b"})
	has("backup plain", b.Annotations, map[string]string{"c": "d"})

	c.mustSalvor(t, "restore", "create", "r", "--from-backup", "plain", "--namespace-mappings", "app:app2", "--labels", "x=y", "--annotations", "z=w", "--wait")
	rs := c.getRestore(t, "r")
	has("restore r", rs.Labels, map[string]string{"x": "y"})
	has("restore r", rs.Annotations, map[string]string{"z": "w"})
}

// TestScheduleSkipImmediatelyDefault: with the server's
// --schedule-skip-immediately (Velero's), a schedule that leaves
// spec.skipImmediately out waits for its first scheduled time, and one that
// sets it false backs up at once; schedule pause and unpause take Velero's
// --skip-immediately and set the field.
func TestScheduleSkipImmediatelyDefault(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	// Velero's --log-format text and client rate flags, too.
	server := c.startServer(t, "--schedule-skip-immediately", "--log-format", "text", "--client-qps", "200", "--client-burst", "400")
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "skip"}})
	// Once the server has written a schedule's next run, a run due now
	// would have been made first.
	settled := func(name string) *salvorv1.Schedule {
		var s *salvorv1.Schedule
		eventually(t, "schedule "+name+" planned", 30*time.Second, func() (bool, string) {
			s = c.schedule(t, name)
			return s.Status.NextRun != nil && s.Status.PausedAt == nil && !s.Spec.Paused && s.Status.ObservedGeneration == s.Generation, fmt.Sprintf("%+v", s.Status)
		})
		return s
	}

	c.mustSalvor(t, "schedule", "create", "left-out", "--schedule", "@every 1h", "--include-namespaces", "skip")
	if s := settled("left-out"); s.Spec.SkipImmediately != nil || s.Status.LastScheduleTime != nil || len(c.scheduleBackups(t, "left-out")) != 0 {
		t.Errorf("a schedule leaving skipImmediately out backed up at once under --schedule-skip-immediately: spec %v, status %+v, backups %d",
			s.Spec.SkipImmediately, s.Status, len(c.scheduleBackups(t, "left-out")))
	}
	c.mustSalvor(t, "schedule", "create", "at-once", "--schedule", "@every 1h", "--include-namespaces", "skip", "--skip-immediately=false")
	eventually(t, "at-once's first backup", 30*time.Second, func() (bool, string) {
		return len(c.scheduleBackups(t, "at-once")) == 1, fmt.Sprint(len(c.scheduleBackups(t, "at-once")), " backups")
	})

	// Unpaused with --skip-immediately=false, left-out backs up at once.
	c.mustSalvor(t, "schedule", "pause", "left-out", "--skip-immediately=false")
	if s := c.schedule(t, "left-out"); s.Spec.SkipImmediately == nil || *s.Spec.SkipImmediately || !s.Spec.Paused {
		t.Fatalf("pause --skip-immediately=false: paused %v, skipImmediately %v", s.Spec.Paused, s.Spec.SkipImmediately)
	}
	eventually(t, "left-out seen paused", 30*time.Second, func() (bool, string) {
		s := c.schedule(t, "left-out")
		return s.Status.PausedAt != nil, fmt.Sprintf("%+v", s.Status)
	})
	c.mustSalvor(t, "schedule", "unpause", "left-out")
	eventually(t, "left-out's backup on unpause", 30*time.Second, func() (bool, string) {
		return len(c.scheduleBackups(t, "left-out")) == 1, fmt.Sprint(len(c.scheduleBackups(t, "left-out")), " backups")
	})

	// Unpaused with --skip-immediately, at-once waits for its next time.
	c.mustSalvor(t, "schedule", "pause", "at-once")
	eventually(t, "at-once seen paused", 30*time.Second, func() (bool, string) {
		s := c.schedule(t, "at-once")
		return s.Status.PausedAt != nil, fmt.Sprintf("%+v", s.Status)
	})
	c.mustSalvor(t, "schedule", "unpause", "at-once", "--skip-immediately")
	if s := settled("at-once"); s.Spec.SkipImmediately == nil || !*s.Spec.SkipImmediately {
		t.Errorf("unpause --skip-immediately: skipImmediately %v", s.Spec.SkipImmediately)
	}
	if n := len(c.scheduleBackups(t, "at-once")); n != 1 {
		t.Errorf("at-once unpaused with --skip-immediately made a backup at once: %d backups", n)
	}
	logs, err := os.ReadFile(server.logs)
	if err != nil || !strings.Contains(string(logs), "level=INFO msg=\"schedule unpaused\"") || strings.Contains(string(logs), `{"time":`) {
		t.Errorf("--log-format text: the server's log is not key=value lines (%v):\n%s", err, tail(string(logs), 10))
	}
}
