package restore

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/salvor-dev/salvor/internal/archive"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// signalOn is a log handler that closes a channel the first time a record
// with a given message is logged.
type signalOn struct {
	slog.Handler
	msg  string
	once chan struct{}
}

func (s *signalOn) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == s.msg {
		select {
		case <-s.once:
		default:
			close(s.once)
		}
	}
	return nil
}

func (s *signalOn) Enabled(context.Context, slog.Level) bool { return true }
func (s *signalOn) WithAttrs([]slog.Attr) slog.Handler       { return s }
func (s *signalOn) WithGroup(string) slog.Handler            { return s }

// deleteNamespace deletes a namespace, which the testbed (no namespace
// controller) leaves being deleted until finalize is called: what a
// cluster's namespace controller does once the namespace's content is gone.
func deleteNamespace(t *testing.T, cs kubernetes.Interface, name string) (finalize func()) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil || ns.DeletionTimestamp == nil {
		t.Fatalf("namespace %s is not being deleted: %v, %v", name, ns, err)
	}
	return func() {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("finalizing namespace %s: %v", name, err)
			return
		}
		ns.Spec.Finalizers = nil
		if _, err := cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
			t.Errorf("finalizing namespace %s: %v", name, err)
		}
	}
}

func namespaceBackup(t *testing.T, ns string) []byte {
	t.Helper()
	var tarball bytes.Buffer
	w, err := archive.NewWriter(&tarball)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteItem(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", ns,
		fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q,"labels":{"team":"a"}}}`, ns)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteItem(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns, "settings",
		fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":%q},"data":{"k":"v"}}`, ns)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return tarball.Bytes()
}

// TestRestoreWaitsForANamespaceBeingDeleted: a namespace deleted and
// restored at once is still being deleted when the restore starts, and
// the API server refuses anything created in it. The restore waits for it
// to go (--terminating-resource-timeout, as Velero) and makes it anew with
// its items; one still being deleted after the timeout is an error of the
// restore, naming the namespace and the flag; a dry run only warns.
func TestRestoreWaitsForANamespaceBeingDeleted(t *testing.T) {
	e, cfg := testEngine(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()

	finalize := deleteNamespace(t, cs, "doomed")
	waiting := &signalOn{Handler: slog.DiscardHandler, msg: "waiting for a namespace being deleted to go, to make it anew", once: make(chan struct{})}
	go func() {
		<-waiting.once
		finalize()
	}()
	rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r-doomed", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "b"}}
	out, err := e.Run(ctx, rs, bytes.NewReader(namespaceBackup(t, "doomed")), slog.New(waiting), nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-waiting.once:
	default:
		t.Fatal("the restore did not wait for the namespace being deleted")
	}
	if out.Results.Errors.Count() != 0 || out.Results.Warnings.Count() != 0 || out.Progress.ItemsRestored != 2 {
		t.Fatalf("%+v, errors %v, warnings %v", out.Progress, out.Results.Errors, out.Results.Warnings)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
	if err != nil || ns.DeletionTimestamp != nil || ns.Labels["team"] != "a" {
		t.Fatalf("namespace after the restore: %v, %v", ns, err)
	}
	if cm, err := cs.CoreV1().ConfigMaps("doomed").Get(ctx, "settings", metav1.GetOptions{}); err != nil || cm.Data["k"] != "v" {
		t.Errorf("configmap after the restore: %v, %v", cm, err)
	}

	// Still being deleted after the timeout: an error that says so.
	finalize = deleteNamespace(t, cs, "stuck")
	defer finalize()
	e.TerminatingTimeout = 2 * time.Second
	rs = &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r-stuck", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "b"}}
	out, err = e.Run(ctx, rs, bytes.NewReader(namespaceBackup(t, "stuck")), slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if errs := fmt.Sprint(out.Results.Errors); !strings.Contains(errs, "namespace stuck was being deleted, and after 2s (--terminating-resource-timeout) it was still there") {
		t.Errorf("errors %v", errs)
	}
	if _, err := cs.CoreV1().ConfigMaps("stuck").Get(ctx, "settings", metav1.GetOptions{}); err == nil {
		t.Error("a configmap was made in a namespace being deleted")
	}

	// A dry run warns, and does not wait.
	rs = &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r-dry", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "b", DryRun: true}}
	e.TerminatingTimeout = time.Hour
	out, err = e.Run(ctx, rs, bytes.NewReader(namespaceBackup(t, "stuck")), slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if warns := fmt.Sprint(out.Results.Warnings); !strings.Contains(warns, "namespace stuck is being deleted: the restore would wait up to 1h0m0s for it to go") {
		t.Errorf("dry run warnings %v", warns)
	}
}

// TestRestoreWaitsForAnItemBeingDeleted: an item the restore would create
// is there but being deleted, held by a finalizer (as a claim still in use
// is). Left as it is, it would go from under the restore; the restore waits
// for it to go and makes it anew from the backup. A dry run says it would;
// one that does not go in time is an error naming it.
func TestRestoreWaitsForAnItemBeingDeleted(t *testing.T) {
	e, cfg := testEngine(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "held"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hold := func() (release func()) {
		t.Helper()
		if _, err := cs.CoreV1().ConfigMaps("held").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Finalizers: []string{"example.com/hold"}},
			Data: map[string]string{"k": "old"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().ConfigMaps("held").Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		return func() {
			if _, err := cs.CoreV1().ConfigMaps("held").Patch(ctx, "settings", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
				t.Errorf("releasing the configmap: %v", err)
			}
		}
	}
	var tarball bytes.Buffer
	w, err := archive.NewWriter(&tarball)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteItem(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "held", "settings",
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"held"},"data":{"k":"v"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	release := hold()
	// A dry run: would be made anew, after the wait.
	rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r-held-dry", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "b", DryRun: true}}
	out, err := e.Run(ctx, rs, bytes.NewReader(tarball.Bytes()), slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := fmt.Sprint(out.Results.DryRun); !strings.Contains(d, "exists but is being deleted: the restore would wait up to 10m0s for it to go and make it anew") {
		t.Errorf("dry run: %s", d)
	}

	waiting := &signalOn{Handler: slog.DiscardHandler, msg: "waiting for an item being deleted to go, to make it anew", once: make(chan struct{})}
	go func() {
		<-waiting.once
		release()
	}()
	rs = &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r-held", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "b"}}
	out, err = e.Run(ctx, rs, bytes.NewReader(tarball.Bytes()), slog.New(waiting), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Results.Errors.Count() != 0 || out.Results.Warnings.Count() != 0 || out.Progress.ItemsRestored != 1 || fmt.Sprint(out.ResourceList["v1/ConfigMap"]) != "[held/settings(created)]" {
		t.Fatalf("%+v, errors %v, warnings %v, list %v", out.Progress, out.Results.Errors, out.Results.Warnings, out.ResourceList)
	}
	cm, err := cs.CoreV1().ConfigMaps("held").Get(ctx, "settings", metav1.GetOptions{})
	if err != nil || cm.DeletionTimestamp != nil || cm.Data["k"] != "v" {
		t.Fatalf("configmap after the restore: %v, %v", cm, err)
	}

	// Not gone in time: an error naming it.
	if err := cs.CoreV1().ConfigMaps("held").Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	release = hold()
	defer release()
	e.TerminatingTimeout = 2 * time.Second
	rs = &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r-held-late", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "b"}}
	out, err = e.Run(ctx, rs, bytes.NewReader(tarball.Bytes()), slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if errs := fmt.Sprint(out.Results.Errors); out.Results.Errors.Count() != 1 || !strings.Contains(errs, "configmaps held/settings was being deleted, and when the restore's waits for deletions ended (2s after the first began, --terminating-resource-timeout) it was still there: not restored") {
		t.Errorf("errors %v", errs)
	}
}
