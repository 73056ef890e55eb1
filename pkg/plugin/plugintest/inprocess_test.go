package plugintest

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/pkg/plugin/api"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

// counting is a RestoreItemAction that counts its calls (the test reads
// the count: plugin and test share memory) and, told to by the item's name,
// ignores its deadline.
type counting struct {
	calls   *atomic.Int32
	release chan struct{}
}

func (counting) AppliesTo() (sdk.ResourceSelector, error) { return sdk.ResourceSelector{}, nil }

func (c counting) Execute(in *sdk.RestoreItemActionExecuteInput) (*sdk.RestoreItemActionExecuteOutput, error) {
	c.calls.Add(1)
	obj := in.Item.(*unstructured.Unstructured).DeepCopy()
	if obj.GetName() == "hang" {
		<-c.release
	}
	obj.SetLabels(map[string]string{"example.io/restored-by": in.Restore.Name})
	return sdk.NewRestoreItemActionExecuteOutput(obj), nil
}

func TestStartInProcess(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	defer close(release)
	srv := sdk.NewServer().RegisterRestoreItemAction("example.io/counting", func(*slog.Logger) (sdk.RestoreItemAction, error) {
		return counting{calls: &calls, release: release}, nil
	})
	m := StartInProcess(t, srv, Options{
		Timeouts: map[string]time.Duration{"RestoreItemAction.Execute": 300 * time.Millisecond},
		Grace:    200 * time.Millisecond,
	})
	if l := m.List(); len(l) != 1 || l[0].Name != "example.io/counting" {
		t.Fatalf("listed %v", l)
	}
	a, err := Get[RestoreItemAction](context.Background(), m, "example.io/counting", nil)
	if err != nil {
		t.Fatal(err)
	}
	restore := &api.Restore{}
	restore.Name = "r"
	execute := func(name string) (RestoreResult, error) {
		item := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}}}
		return a.Execute(context.Background(), RestoreInput{Item: item, ItemFromBackup: item, Restore: restore})
	}

	res, err := execute("c")
	if err != nil || res.Item.GetLabels()["example.io/restored-by"] != "r" {
		t.Fatalf("Execute = %+v, %v", res, err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the plugin counted %d calls, want 1 (it runs in this process)", n)
	}

	// A call past its deadline and grace: the host stops the in-process
	// server as it would kill a process, says so, and the next call is
	// served by a new one.
	_, err = execute("hang")
	var ce *CallError
	if !errors.As(err, &ce) || !errors.Is(err, ErrPluginHung) || !strings.Contains(err.Error(), "its in-process server in-process:TestStartInProcess was stopped") {
		t.Fatalf("a hung call: %v, want the host's CallError saying the plugin ignored its deadline and its server was stopped", err)
	}
	res, err = execute("after")
	if err != nil || res.Item.GetName() != "after" {
		t.Fatalf("the call after a hung one: %+v, %v", res, err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the plugin counted %d calls, want 3", n)
	}
}

// TestStartInProcessRefusesMistakes: a server with a registration mistake
// fails the start, naming it, as the binary would exit saying it.
func TestStartInProcessRefusesMistakes(t *testing.T) {
	srv := sdk.NewServer().RegisterRestoreItemAction("no-slash", func(*slog.Logger) (sdk.RestoreItemAction, error) {
		return counting{}, nil
	})
	if _, err := srv.ServeInProcess(context.Background()); err == nil || !strings.Contains(err.Error(), "no-slash") {
		t.Fatalf("ServeInProcess with an invalid name: %v", err)
	}
}
