package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"k8s.io/apimachinery/pkg/util/wait"
)

func do(what string) map[string]string { return map[string]string{"test.salvor.dev/do": what} }

func biaV2(t *testing.T, m *Manager) BackupItemAction {
	t.Helper()
	a, err := Get(ctxT(t), m, BackupItemActions, "test.salvor.dev/bia-v2", nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestPluginErrorKeepsMessageAndStack(t *testing.T) {
	m, _ := newManager(t, Options{})
	_, err := biaV2(t, m).Execute(ctxT(t), configMap("bad", do("error")), backup)
	var ce *CallError
	if !errors.As(err, &ce) {
		t.Fatalf("Execute error %v is not a *CallError", err)
	}
	if ce.Message != "the test asked for an error" || ce.Code != codes.Unknown {
		t.Errorf("message %q code %v", ce.Message, ce.Code)
	}
	for _, want := range []string{"test.salvor.dev/bia-v2", "BackupItemActionV2", "Execute", "ConfigMap ns/bad", "the test asked for an error"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if len(ce.Stack) == 0 || !strings.Contains(ce.StackTrace(), "main.act") || !strings.Contains(ce.StackTrace(), "testplugin/main.go") {
		t.Errorf("stack does not show where the plugin failed:\n%s", ce.StackTrace())
	}
}

func TestPanicBecomesError(t *testing.T) {
	m, _ := newManager(t, Options{})
	a := biaV2(t, m)
	_, err := a.Execute(ctxT(t), configMap("p", do("panic")), backup)
	var ce *CallError
	if !errors.As(err, &ce) || ce.Code != codes.Aborted || !strings.Contains(ce.Message, "plugin panicked: the test asked for a panic") {
		t.Fatalf("Execute of a panicking plugin: %v", err)
	}
	if !strings.Contains(ce.StackTrace(), "main.act") {
		t.Errorf("panic stack does not name the panic site:\n%s", ce.StackTrace())
	}
	// The process survived the panic.
	if _, err := a.Execute(ctxT(t), configMap("ok", nil), backup); err != nil {
		t.Errorf("call after a panic: %v", err)
	}
	if r := m.Restarts(testBinary()); r != 0 {
		t.Errorf("%d restarts after a recovered panic, want 0", r)
	}
}

func TestDeadlineReachesPlugin(t *testing.T) {
	m, _ := newManager(t, Options{Timeouts: map[string]time.Duration{"BackupItemActionV2.Execute": 42 * time.Second}})
	res, err := biaV2(t, m).Execute(context.Background(), configMap("d", nil), backup)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Item.GetAnnotations()["test.salvor.dev/deadline-in"]; got != "42s" {
		t.Errorf("plugin saw a deadline %q away, want 42s (the configured timeout, without the grace period)", got)
	}
	// A caller's sooner deadline wins over the default.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err = biaV2(t, m).Execute(ctx, configMap("d", nil), backup)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Item.GetAnnotations()["test.salvor.dev/deadline-in"]; got != "20s" {
		t.Errorf("plugin saw a deadline %q away, want the caller's 20s", got)
	}
}

func TestContextAwarePluginStopsAtDeadline(t *testing.T) {
	m, _ := newManager(t, Options{
		Timeouts: map[string]time.Duration{"BackupItemActionV2.Execute": 300 * time.Millisecond},
		Grace:    time.Minute,
	})
	start := time.Now()
	_, err := biaV2(t, m).Execute(context.Background(), configMap("w", do("wait-ctx")), backup)
	waited := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrPluginHung) {
		t.Fatalf("Execute of a plugin that honours its deadline: %v", err)
	}
	if !strings.Contains(err.Error(), "stopped by the host") {
		t.Errorf("error %q lost the plugin's own message", err)
	}
	// It returned at the plugin's deadline, long before deadline + grace.
	if waited > 30*time.Second {
		t.Errorf("waited %s: the plugin did not see its deadline", waited)
	}
	if r := m.Restarts(testBinary()); r != 0 {
		t.Errorf("a plugin that honoured its deadline was restarted (%d)", r)
	}
}

func TestCancelStopsInFlightCall(t *testing.T) {
	m, logs := newManager(t, Options{})
	a := biaV2(t, m)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := a.Execute(ctx, configMap("c", do("wait-ctx")), backup)
		errc <- err
	}()
	// Cancel once the plugin holds the call: it says it waits on its context.
	holding := func(context.Context) (bool, error) {
		_, _, ok := logs.find("waiting on its context")
		return ok, nil
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true, holding); err != nil {
		t.Fatalf("the plugin never got the call: %v", err)
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call returned %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cancelling the caller's context did not end the call")
	}
}

func TestHungPluginIsKilledAndRestarted(t *testing.T) {
	m, logs := newManager(t, Options{
		Timeouts: map[string]time.Duration{"BackupItemActionV2.Execute": 200 * time.Millisecond},
		Grace:    300 * time.Millisecond,
	})
	a := biaV2(t, m)
	if _, err := a.Execute(context.Background(), configMap("warm", nil), backup); err != nil {
		t.Fatal(err)
	}
	oldPID := m.PID(testBinary())
	_, err := a.Execute(context.Background(), configMap("stuck", do("ignore-ctx")), backup)
	var ce *CallError
	if !errors.As(err, &ce) || !errors.Is(err, ErrPluginHung) {
		t.Fatalf("Execute of a hung plugin: %v", err)
	}
	if ce.Waited < 500*time.Millisecond {
		t.Errorf("gave up after %s, before deadline + grace", ce.Waited)
	}
	for _, want := range []string{"test.salvor.dev/bia-v2", "Execute", "ConfigMap ns/stuck", "no answer after", "killed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// The killed process is gone (waitDead fails the test if it is not).
	waitDead(t, oldPID)
	res, err := a.Execute(context.Background(), configMap("next", nil), backup)
	if err != nil || res.OperationID != "op-next-nightly" {
		t.Fatalf("call after the hang: %+v, %v", res, err)
	}
	if r := m.Restarts(testBinary()); r != 1 {
		t.Errorf("restarts = %d, want 1", r)
	}
	if m.PID(testBinary()) == oldPID {
		t.Error("the call after the hang went to the old process")
	}
	if _, _, ok := logs.find("plugin ignored its deadline; killed its process"); !ok {
		t.Error("the kill was not logged")
	}
}

func TestCrashDuringCall(t *testing.T) {
	m, _ := newManager(t, Options{})
	a := biaV2(t, m)
	_, err := a.Execute(ctxT(t), configMap("boom", do("crash")), backup)
	var ce *CallError
	if !errors.As(err, &ce) || !errors.Is(err, ErrPluginCrashed) {
		t.Fatalf("Execute of a crashing plugin: %v", err)
	}
	for _, want := range []string{"exit status 2", "panic: the test asked for a crash", "ConfigMap ns/boom", testBinary()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("crash error %q does not include %q", err, want)
		}
	}
	if _, err := a.Execute(ctxT(t), configMap("after", nil), backup); err != nil {
		t.Fatalf("call after the crash: %v", err)
	}
	if r := m.Restarts(testBinary()); r != 1 {
		t.Errorf("restarts = %d, want 1", r)
	}
}

func TestExitDuringCallShowsItsOutput(t *testing.T) {
	m, _ := newManager(t, Options{})
	a := biaV2(t, m)
	_, err := a.Execute(ctxT(t), configMap("bye", do("exit")), backup)
	if !errors.Is(err, ErrPluginCrashed) || !strings.Contains(err.Error(), "exit status 3") ||
		!strings.Contains(err.Error(), "exiting: the test asked for it") {
		t.Fatalf("Execute of a plugin that exits: %v", err)
	}
	if _, err := a.Execute(ctxT(t), configMap("after", nil), backup); err != nil {
		t.Fatalf("call after the exit: %v", err)
	}
}

func TestKilledBetweenCallsRestartsTransparently(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	a := biaV2(t, m)
	if _, err := a.Execute(ctx, configMap("one", nil), backup); err != nil {
		t.Fatal(err)
	}
	pid := m.PID(testBinary())
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid)
	res, err := a.Execute(ctx, configMap("two", nil), backup)
	if err != nil || res.OperationID != "op-two-nightly" {
		t.Fatalf("call after SIGKILL: %+v, %v", res, err)
	}
	if m.PID(testBinary()) == pid {
		t.Error("no new process")
	}
}

func TestKilledObjectStoreIsReinitialised(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	store, err := Get(ctx, m, ObjectStores, "test.salvor.dev/memory", map[string]string{"prefix": "kept/"})
	if err != nil {
		t.Fatal(err)
	}
	pid := storePID(t, m)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid)
	url, err := store.CreateSignedURL(ctx, "b", "k", time.Second)
	if err != nil {
		t.Fatalf("call after SIGKILL: %v", err)
	}
	if !strings.HasSuffix(url, "prefix=kept/") {
		t.Errorf("restarted store answered %q: its config was not replayed through Init", url)
	}
}

// storePID finds the one ObjectStore process the manager runs.
func storePID(t *testing.T, m *Manager) int {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, p := range m.processes {
		if strings.Contains(key, "\x00ObjectStore\x00") {
			return p.pid()
		}
	}
	t.Fatal("no ObjectStore process")
	return 0
}

// waitDead waits until a killed process is gone: reaped, not only a zombie
// (the kernel finishes a multi-threaded process's exit a moment after its
// leader turns zombie). Between two calls there is always that moment.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	gone := func(context.Context) (bool, error) { return syscall.Kill(pid, 0) != nil, nil }
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, gone); err != nil {
		t.Fatalf("process %d did not die: %v", pid, err)
	}
}

func TestManyCallersShareOneProcess(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	a := biaV2(t, m)
	var wg sync.WaitGroup
	errs := make(chan error, 64*20)
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				name := fmt.Sprintf("g%d-i%d", g, i)
				res, err := a.Execute(ctx, configMap(name, nil), backup)
				if err != nil {
					errs <- err
					return
				}
				if res.OperationID != "op-"+name+"-nightly" || res.Item.GetName() != name {
					errs <- fmt.Errorf("call for %s got %q / %q", name, res.OperationID, res.Item.GetName())
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if r := m.Restarts(testBinary()); r != 0 {
		t.Errorf("restarts = %d", r)
	}
}

func TestPluginLogsAreReemitted(t *testing.T) {
	m, logs := newManager(t, Options{})
	if _, err := biaV2(t, m).Execute(ctxT(t), configMap("l", do("log")), backup); err != nil {
		t.Fatal(err)
	}
	rec, attrs := waitLog(t, logs, "a warning from the plugin")
	if rec.Level != slog.LevelWarn || attrs["plugin_binary"] != "testplugin" || attrs["detail"] != "42" {
		t.Errorf("re-emitted record: level %v attrs %v", rec.Level, attrs)
	}
	// The SDK's per-plugin logger names the plugin.
	if _, attrs := waitLog(t, logs, "executing"); attrs["plugin"] != "test.salvor.dev/bia-v2" || attrs["item"] != "l" {
		t.Errorf("plugin log attrs %v", attrs)
	}
}

// waitLog waits for a plugin's log line to reach the host's logger (the
// plugin's stderr is read apart from its gRPC answers, so it may come later).
func waitLog(t *testing.T, logs *records, msg string) (slog.Record, map[string]string) {
	t.Helper()
	var rec slog.Record
	var attrs map[string]string
	found := func(context.Context) (ok bool, _ error) {
		rec, attrs, ok = logs.find(msg)
		return ok, nil
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, found); err != nil {
		t.Fatalf("the plugin's log line %q never reached the host's logger: %v", msg, err)
	}
	return rec, attrs
}

func TestDuplicatePluginsAreRejected(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(testBinary(), filepath.Join(dir, sub, "plugin")); err != nil {
			b, rerr := os.ReadFile(testBinary())
			if rerr != nil {
				t.Fatal(rerr)
			}
			if err := os.WriteFile(filepath.Join(dir, sub, "plugin"), b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A file that is not executable is not a plugin.
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("not a plugin"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := NewManager(Options{Logger: slog.New(&records{})})
	defer m.Close()
	err := m.Discover(ctxT(t), dir)
	if err == nil {
		t.Fatal("two binaries serving the same plugins were accepted")
	}
	for _, want := range []string{`BackupItemActionV2 "test.salvor.dev/bia-v2" is served by both`, filepath.Join(dir, "a", "plugin"), filepath.Join(dir, "b", "plugin")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if len(m.List()) != 0 {
		t.Errorf("a failed discovery registered %d plugins", len(m.List()))
	}
}

func TestNotAPlugin(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "not-a-plugin")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'I am not a plugin' >&2\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := NewManager(Options{Logger: slog.New(&records{}), StartTimeout: 10 * time.Second})
	defer m.Close()
	err := m.Discover(ctxT(t), dir)
	if err == nil || !strings.Contains(err.Error(), script) || !strings.Contains(err.Error(), "I am not a plugin") {
		t.Errorf("discovering a binary that is not a plugin: %v", err)
	}
}

// TestObjectStoreInitialisedOnce gets the same store for many callers at
// once: its process sees one Init (another while calls are in flight would
// race with them in most plugins), and a restarted process one again.
func TestObjectStoreInitialisedOnce(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	inits := func(s ObjectStore) string {
		t.Helper()
		rc, err := s.GetObject(ctx, "_meta", "inits")
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var g errgroup.Group
	stores := make([]ObjectStore, 16)
	for i := range stores {
		g.Go(func() (err error) {
			stores[i], err = Get(ctx, m, ObjectStores, "test.salvor.dev/memory", map[string]string{"prefix": "once/"})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := inits(stores[0]); n != "1" {
		t.Errorf("%s Inits for 16 callers of one store, want 1", n)
	}
	pid := storePID(t, m)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid)
	if n := inits(stores[1]); n != "1" {
		t.Errorf("%s Inits in the restarted process, want 1", n)
	}
	if _, err := Get(ctx, m, ObjectStores, "test.salvor.dev/memory", map[string]string{"prefix": "once/"}); err != nil {
		t.Fatal(err)
	}
	if n := inits(stores[2]); n != "1" {
		t.Errorf("%s Inits after one more caller in the restarted process, want 1", n)
	}
}

// TestCrashingPluginBacksOff: a plugin that crashes on every call is not
// restarted for every item: after the second crash in a row, calls fail at
// once, naming the binary and its last stderr lines, until the backoff has
// passed; then a call that works ends the streak.
func TestCrashingPluginBacksOff(t *testing.T) {
	restarts := 0
	m, _ := newManager(t, Options{RestartBackoff: 2 * time.Second, RestartBackoffMax: time.Minute,
		OnRestart: func(string) { restarts++ }})
	a := biaV2(t, m)
	for i := range 2 {
		if _, err := a.Execute(ctxT(t), configMap(fmt.Sprintf("crash-%d", i), do("crash")), backup); !errors.Is(err, ErrPluginCrashed) {
			t.Fatalf("crash %d: %v", i, err)
		}
	}
	// Two crashes in a row: the next calls fail fast, without a process.
	var fast []time.Duration
	for i := range 20 {
		start := time.Now()
		_, err := a.Execute(ctxT(t), configMap(fmt.Sprintf("item-%d", i), nil), backup)
		fast = append(fast, time.Since(start))
		if !errors.Is(err, ErrPluginCrashed) || !strings.Contains(err.Error(), "crashed 2 times in a row") ||
			!strings.Contains(err.Error(), testBinary()) || !strings.Contains(err.Error(), "panic: the test asked for a crash") {
			t.Fatalf("call %d during the backoff: %v", i, err)
		}
	}
	if restarts != 1 {
		t.Errorf("restarts = %d during the backoff, want 1 (the first crash's)", restarts)
	}
	// After the backoff a call starts the plugin again and works.
	err := wait.PollUntilContextTimeout(ctxT(t), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := a.Execute(ctx, configMap("after", nil), backup)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the plugin never came back after its backoff: %v", err)
	}
	if restarts != 2 {
		t.Errorf("restarts = %d, want 2", restarts)
	}
	t.Logf("calls during the backoff took %v", fast)
}

// dribble is a body that yields 1 KiB chunks at a given rate: an upload
// that keeps moving, slowly. The pacing is the source's (a rate limiter),
// not a wait for anything: the test needs a transfer longer than its
// deadline.
type dribble struct {
	chunks  int
	limiter *rate.Limiter
}

func newDribble(chunks int, perSecond float64) *dribble {
	return &dribble{chunks: chunks, limiter: rate.NewLimiter(rate.Limit(perSecond), 1)}
}

func (d *dribble) Read(p []byte) (int, error) {
	if d.chunks == 0 {
		return 0, io.EOF
	}
	if err := d.limiter.Wait(context.Background()); err != nil {
		return 0, err
	}
	d.chunks--
	n := min(len(p), 1024)
	for i := range n {
		p[i] = 'x'
	}
	return n, nil
}

// TestStreamsAreBoundedByProgress: an upload that keeps moving runs well
// past its deadline and succeeds; one the plugin stops taking fails alone
// once it makes no progress for its deadline, and the plugin's process —
// and another caller's call to it — live on.
func TestStreamsAreBoundedByProgress(t *testing.T) {
	m, _ := newManager(t, Options{Grace: 200 * time.Millisecond,
		Timeouts: map[string]time.Duration{"ObjectStore.PutObject": 500 * time.Millisecond}})
	ctx := ctxT(t)
	store, err := Get(ctx, m, ObjectStores, "test.salvor.dev/memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	// 30 chunks at 10 a second: about 3 s, six times the deadline.
	start := time.Now()
	if err := store.PutObject(ctx, "bucket", "slow", newDribble(30, 10)); err != nil {
		t.Fatalf("an upload that keeps moving failed after %s: %v", time.Since(start), err)
	}
	rc, err := store.GetObject(ctx, "bucket", "slow")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if len(got) != 30*1024 {
		t.Errorf("the slow upload stored %d bytes, want %d", len(got), 30*1024)
	}

	pid := m.PID(testBinary())
	// The plugin waits on its context before reading a byte: the upload
	// stalls once gRPC's window is full.
	stalled := make(chan error, 1)
	go func() {
		stalled <- store.PutObject(ctx, "bucket", "wait-ctx", bytes.NewReader(make([]byte, 32<<20)))
	}()
	// Meanwhile another caller's call to the same process works.
	if ok, err := store.ObjectExists(ctx, "bucket", "slow"); !ok || err != nil {
		t.Errorf("another call during the stalled upload: %v, %v", ok, err)
	}
	err = <-stalled
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "no progress for 500ms") {
		t.Fatalf("a stalled upload: %v", err)
	}
	if m.PID(testBinary()) != pid || m.Restarts(testBinary()) != 0 {
		t.Errorf("the process was killed for a stalled stream (pid %d → %d, %d restarts)", pid, m.PID(testBinary()), m.Restarts(testBinary()))
	}
	if ok, err := store.ObjectExists(ctx, "bucket", "slow"); !ok || err != nil {
		t.Errorf("a call after the stalled upload: %v, %v", ok, err)
	}
}
