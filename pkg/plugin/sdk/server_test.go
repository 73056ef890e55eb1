package sdk

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/salvor-dev/salvor/pkg/plugin/kind"
	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
	riav2 "github.com/salvor-dev/salvor/pkg/plugin/proto/restoreitemaction/v2"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

type nopAction struct{}

func (nopAction) AppliesTo() (ResourceSelector, error) { return ResourceSelector{}, nil }
func (nopAction) Execute(item runtime.Unstructured, _ *Backup) (runtime.Unstructured, []ResourceIdentifier, error) {
	return item, nil, nil
}

type nopSnapshotter struct{ VolumeSnapshotter }

func (nopSnapshotter) Name() string                               { return "" }
func (nopSnapshotter) Progress(string) (OperationProgress, error) { return OperationProgress{}, nil }
func (nopSnapshotter) Cancel(string) error                        { return nil }

func newAction(*slog.Logger) (BackupItemAction, error)  { return nopAction{}, nil }
func newSnap(*slog.Logger) (VolumeSnapshotterV2, error) { return nopSnapshotter{}, nil }

func TestRegistrationMistakes(t *testing.T) {
	s := NewServer().
		RegisterBackupItemAction("example.io/a", newAction).
		RegisterBackupItemAction("example.io/a", newAction).
		RegisterBackupItemAction("not-qualified", newAction)
	err := s.Err()
	if err == nil {
		t.Fatal("no error for a duplicate and an invalid name")
	}
	for _, want := range []string{`BackupItemAction plugin "example.io/a" is registered twice`, `plugin name "not-qualified" must be of the form <domain>/<name>`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if got := len(s.Plugins()); got != 1 {
		t.Errorf("%d plugins registered, want 1", got)
	}
}

func TestListPluginsPerHost(t *testing.T) {
	s := NewServer().
		RegisterVolumeSnapshotterV2("example.io/snap", newSnap).
		RegisterBackupItemAction("example.io/a", newAction)
	l := listerServer{s}
	list := func(ctx context.Context) string {
		resp, err := l.ListPlugins(ctx, &pb.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range resp.GetPlugins() {
			out = append(out, p.GetKind()+" "+p.GetName())
		}
		return strings.Join(out, ", ")
	}
	salvor := metadata.NewIncomingContext(context.Background(), metadata.Pairs(wire.HostHeader, "1"))
	if got, want := list(salvor), "VolumeSnapshotterV2 example.io/snap, BackupItemAction example.io/a"; got != want {
		t.Errorf("to Salvor: %s, want %s", got, want)
	}
	// Velero rejects kinds it does not know; it gets the v1 face instead.
	if got, want := list(context.Background()), "VolumeSnapshotter example.io/snap, BackupItemAction example.io/a"; got != want {
		t.Errorf("to Velero: %s, want %s", got, want)
	}
	if _, err := s.kinds[kind.VolumeSnapshotterV2].(*kindServer[snapshotterCalls]).r.get("example.io/other"); err == nil ||
		!strings.Contains(err.Error(), `no VolumeSnapshotterV2 plugin named "example.io/other" (it serves example.io/snap)`) {
		t.Errorf("unknown name: %v", err)
	}
}

func TestDecodedObjectsAreCopies(t *testing.T) {
	raw := []byte(`{"metadata":{"name":"b1"},"spec":{"includedNamespaces":["a"]}}`)
	first, err := decodeObject[Backup](raw, "backup")
	if err != nil {
		t.Fatal(err)
	}
	first.Spec.IncludedNamespaces[0] = "changed by a plugin"
	second, err := decodeObject[Backup](raw, "backup")
	if err != nil {
		t.Fatal(err)
	}
	if second.Name != "b1" || second.Spec.IncludedNamespaces[0] != "a" {
		t.Errorf("second decode saw %+v", second)
	}
	if _, err := decodeObject[Backup]([]byte(`{"metadata":`), "backup"); err == nil || !strings.Contains(err.Error(), "decoding backup") {
		t.Errorf("bad JSON: %v", err)
	}
}

// ctxAction gives Execute in its context-taking form only; Progress and
// Cancel stay plain.
type ctxAction struct{ nopV2 }

type ctxKey struct{}

func (ctxAction) ExecuteWithContext(ctx context.Context, item runtime.Unstructured, _ *Backup) (runtime.Unstructured, []ResourceIdentifier, string, []ResourceIdentifier, error) {
	return item, nil, ctx.Value(ctxKey{}).(string), nil, nil
}

type nopV2 struct{}

func (nopV2) Name() string { return "" }
func (nopV2) AppliesTo() (ResourceSelector, error) {
	return ResourceSelector{IncludedResources: []string{"pods"}}, nil
}
func (nopV2) Execute(item runtime.Unstructured, _ *Backup) (runtime.Unstructured, []ResourceIdentifier, string, []ResourceIdentifier, error) {
	return item, nil, "plain", nil, nil
}
func (nopV2) Progress(id string, _ *Backup) (OperationProgress, error) {
	return OperationProgress{Description: "plain " + id}, nil
}
func (nopV2) Cancel(string, *Backup) error { return errors.New("plain cancel") }

// TestFormChosenPerMethod: each method is served by its context-taking form
// when the implementation has one, by the plain form otherwise, each on its
// own; a factory that makes nothing is an error naming the plugin.
func TestFormChosenPerMethod(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey{}, "with context")
	for _, tc := range []struct {
		name          string
		impl          BackupItemActionV2
		wantOperation string
	}{
		{"plain", nopV2{}, "plain"},
		{"execute with context", ctxAction{}, "with context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := backupV2(tc.impl)
			if _, _, op, _, err := c.execute(ctx, nil, &Backup{}); err != nil || op != tc.wantOperation {
				t.Errorf("execute: operation %q, %v; want %q", op, err, tc.wantOperation)
			}
			if p, err := c.progress(ctx, "op-1", &Backup{}); err != nil || p.Description != "plain op-1" {
				t.Errorf("progress: %+v, %v", p, err)
			}
			if err := c.cancel(ctx, "op-1", &Backup{}); err == nil || err.Error() != "plain cancel" {
				t.Errorf("cancel: %v", err)
			}
			if sel, err := c.AppliesTo(); err != nil || len(sel.IncludedResources) != 1 {
				t.Errorf("appliesTo: %+v, %v", sel, err)
			}
		})
	}
	s := NewServer().RegisterBackupItemActionV2("example.io/none", func(*slog.Logger) (BackupItemActionV2, error) { return nil, nil })
	_, err := s.kinds[kind.BackupItemActionV2].(*kindServer[backupCalls]).r.get("example.io/none")
	if err == nil || !strings.Contains(err.Error(), `creating BackupItemActionV2 plugin "example.io/none": its factory returned no implementation`) {
		t.Errorf("nil implementation: %v", err)
	}
}

// ctxRestoreAction gives Progress in its context-taking form only.
type ctxRestoreAction struct{}

func (ctxRestoreAction) Name() string                         { return "" }
func (ctxRestoreAction) AppliesTo() (ResourceSelector, error) { return ResourceSelector{}, nil }
func (ctxRestoreAction) Execute(*RestoreItemActionExecuteInput) (*RestoreItemActionExecuteOutput, error) {
	return nil, nil
}
func (ctxRestoreAction) Progress(string, *Restore) (OperationProgress, error) {
	return OperationProgress{Description: "plain"}, nil
}
func (ctxRestoreAction) ProgressWithContext(ctx context.Context, _ string, _ *Restore) (OperationProgress, error) {
	return OperationProgress{Description: ctx.Value(ctxKey{}).(string)}, nil
}
func (ctxRestoreAction) Cancel(string, *Restore) error { return errors.New("plain cancel") }
func (ctxRestoreAction) AreAdditionalItemsReady([]ResourceIdentifier, *Restore) (bool, error) {
	return true, nil
}

func TestRestoreFormChosenPerMethod(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey{}, "with context")
	c := restoreV2(ctxRestoreAction{})
	if p, err := c.progress(ctx, "op", &Restore{}); err != nil || p.Description != "with context" {
		t.Errorf("progress: %+v, %v", p, err)
	}
	if err := c.cancel(ctx, "op", &Restore{}); err == nil || err.Error() != "plain cancel" {
		t.Errorf("cancel: %v", err)
	}
	if ready, err := c.ready(ctx, nil, &Restore{}); err != nil || !ready {
		t.Errorf("ready: %v, %v", ready, err)
	}
}

type v1RestoreAction struct{}

func (v1RestoreAction) AppliesTo() (ResourceSelector, error) { return ResourceSelector{}, nil }
func (v1RestoreAction) Execute(in *RestoreItemActionExecuteInput) (*RestoreItemActionExecuteOutput, error) {
	out := NewRestoreItemActionExecuteOutput(in.Item)
	out.OperationID, out.WaitForAdditionalItems, out.AdditionalItemsReadyTimeout = "op", true, time.Minute
	out.SkipRestore = true
	return out, nil
}

// TestOlderVersionServedByNewerServer: a v1 action is served by the v2
// server under the v1 service name. Over a real gRPC connection a v1 client
// gets its answer, the methods v1 does not have are not there, and what a
// v1 implementation set in the output's v2 fields is not sent.
func TestOlderVersionServedByNewerServer(t *testing.T) {
	s := NewServer().RegisterRestoreItemAction("example.io/r", func(*slog.Logger) (RestoreItemAction, error) { return v1RestoreAction{}, nil })
	lis := bufconn.Listen(1 << 20)
	g := s.NewGRPCServer()
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()
	cc, err := grpc.NewClient("passthrough:///bufnet", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx := context.Background()

	item := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`)
	resp, err := pb.NewRestoreItemActionClient(cc).Execute(ctx, &pb.RestoreItemActionExecuteRequest{Plugin: "example.io/r", Item: item, Restore: []byte(`{}`)})
	if err != nil || !resp.GetSkipRestore() || !strings.Contains(string(resp.GetItem()), `"name":"c"`) {
		t.Fatalf("v1 Execute = %v, %v", resp, err)
	}
	// The same bytes read as the v2 answer: no operation, no waiting.
	var v2 riav2.RestoreItemActionExecuteResponse
	if err := cc.Invoke(ctx, "/generated.RestoreItemAction/Execute", &riav2.RestoreItemActionExecuteRequest{Plugin: "example.io/r", Item: item}, &v2); err != nil {
		t.Fatal(err)
	}
	if v2.GetOperationID() != "" || v2.GetWaitForAdditionalItems() || v2.GetAdditionalItemsReadyTimeout() != nil {
		t.Errorf("a v1 action sent v2 fields: %v", &v2)
	}
	err = cc.Invoke(ctx, "/generated.RestoreItemAction/Progress", &riav2.RestoreItemActionProgressRequest{Plugin: "example.io/r"}, &riav2.RestoreItemActionProgressResponse{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("v1 service answered Progress: %v", err)
	}
	err = cc.Invoke(ctx, "/v2.RestoreItemAction/Execute", &riav2.RestoreItemActionExecuteRequest{Plugin: "example.io/r", Item: item}, &v2)
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("a v1 registration is served as v2: %v", err)
	}
}
