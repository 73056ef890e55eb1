// Command wait-restore-action is a RestoreItemActionV2 that makes Salvor
// restore an item's dependencies first and wait until they are ready.
//
// An item annotated example.io/depends-on="configmaps/settings,secrets/creds"
// (resource[.group]/name, in the item's namespace) gets those items restored
// before it, and Salvor calls AreAdditionalItemsReady until each exists in
// the cluster and is not annotated example.io/ready=false. The wait is bounded
// by example.io/ready-timeout (a Go duration such as 30s) or, without it, by
// Salvor's --additional-items-ready-timeout.
//
// The plugin talks to the cluster with the KUBECONFIG environment variable's
// kubeconfig, or in-cluster credentials.
//
// It also shows a restore operation: an item annotated
// example.io/restore-operation-seconds=N starts one that "runs" N seconds.
// As in async-backup-action, the operation ID holds its start and length,
// so a restarted plugin answers Progress, and Cancel leaves a marker file in
// EXAMPLE_ASYNC_STATE_DIR (default $TMPDIR/salvor-example-async).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

const (
	operationSeconds = "example.io/restore-operation-seconds"
	dependsOn        = "example.io/depends-on"
	readyTimeout     = "example.io/ready-timeout"
	readyFlag        = "example.io/ready"
)

func main() {
	sdk.NewServer().
		RegisterRestoreItemActionV2("example.io/wait-for-dependencies", func(log *slog.Logger) (sdk.RestoreItemActionV2, error) {
			return &waiter{log: log}, nil
		}).
		Serve()
}

type waiter struct {
	log *slog.Logger

	once    sync.Once
	client  dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	initErr error
}

func (w *waiter) Name() string { return "example.io/wait-for-dependencies" }

func (w *waiter) AppliesTo() (sdk.ResourceSelector, error) { return sdk.ResourceSelector{}, nil }

// parseDeps reads "resource[.group]/name,..." into identifiers.
func parseDeps(value, namespace string) ([]sdk.ResourceIdentifier, error) {
	var out []sdk.ResourceIdentifier
	for _, part := range strings.Split(value, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		res, name, ok := strings.Cut(part, "/")
		if !ok || res == "" || name == "" {
			return nil, fmt.Errorf("%s: %q is not resource[.group]/name", dependsOn, part)
		}
		out = append(out, sdk.ResourceIdentifier{GroupResource: schema.ParseGroupResource(res), Namespace: namespace, Name: name})
	}
	return out, nil
}

func (w *waiter) Execute(in *sdk.RestoreItemActionExecuteInput) (*sdk.RestoreItemActionExecuteOutput, error) {
	obj := in.Item.(*unstructured.Unstructured)
	ann := obj.GetAnnotations()
	out := sdk.NewRestoreItemActionExecuteOutput(in.Item)
	if raw, ok := ann[operationSeconds]; ok {
		secs, err := strconv.ParseFloat(raw, 64)
		if err != nil || secs < 0 {
			return nil, sdk.Errorf("%s=%q: want a number of seconds", operationSeconds, raw)
		}
		out.OperationID = fmt.Sprintf("%d-%d", time.Now().UnixMilli(), int64(secs*1000))
	}
	value, ok := ann[dependsOn]
	if !ok {
		return out, nil
	}
	deps, err := parseDeps(value, obj.GetNamespace())
	if err != nil {
		return nil, sdk.WithStack(err)
	}
	out.AdditionalItems = deps
	out.WaitForAdditionalItems = true
	if raw, ok := ann[readyTimeout]; ok {
		d, err := time.ParseDuration(raw)
		if err != nil || d <= 0 {
			return nil, sdk.Errorf("%s=%q: want a positive duration such as 30s", readyTimeout, raw)
		}
		out.AdditionalItemsReadyTimeout = d
	}
	return out, nil
}

func stateDir() string {
	if d := os.Getenv("EXAMPLE_ASYNC_STATE_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "salvor-example-async")
}

// Progress works from the operation ID alone: "<start ms>-<length ms>".
func (w *waiter) Progress(id string, _ *sdk.Restore) (sdk.OperationProgress, error) {
	startRaw, lengthRaw, ok := strings.Cut(id, "-")
	start, err1 := strconv.ParseInt(startRaw, 10, 64)
	length, err2 := strconv.ParseInt(lengthRaw, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return sdk.OperationProgress{}, fmt.Errorf("operation ID %q was not made by this plugin", id)
	}
	begun := time.UnixMilli(start)
	total := time.Duration(length) * time.Millisecond
	elapsed := min(time.Since(begun), total)
	p := sdk.OperationProgress{NCompleted: int64(elapsed / time.Second), NTotal: int64((total + time.Second - 1) / time.Second),
		OperationUnits: "seconds", Started: begun, Updated: time.Now()}
	if _, err := os.Stat(filepath.Join(stateDir(), "restore-"+id+".cancelled")); err == nil {
		p.Completed, p.Err = true, "cancelled"
		return p, nil
	}
	p.Completed = elapsed >= total
	return p, nil
}

// Cancel leaves a marker that outlives this process.
func (w *waiter) Cancel(id string, _ *sdk.Restore) error {
	if err := os.MkdirAll(stateDir(), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(stateDir(), "restore-"+id+".cancelled"), []byte(time.Now().UTC().Format(time.RFC3339)), 0o644)
}

func (w *waiter) connect() error {
	w.once.Do(func() {
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			w.initErr = fmt.Errorf("no cluster to check readiness in (set KUBECONFIG or run in a cluster): %w", err)
			return
		}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			w.initErr = err
			return
		}
		w.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
		w.client, w.initErr = dynamic.NewForConfig(cfg)
	})
	return w.initErr
}

func (w *waiter) AreAdditionalItemsReady(items []sdk.ResourceIdentifier, r *sdk.Restore) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return w.AreAdditionalItemsReadyWithContext(ctx, items, r)
}

// AreAdditionalItemsReadyWithContext stops looking when Salvor's deadline passes.
func (w *waiter) AreAdditionalItemsReadyWithContext(ctx context.Context, items []sdk.ResourceIdentifier, _ *sdk.Restore) (bool, error) {
	if err := w.connect(); err != nil {
		return false, err
	}
	for _, item := range items {
		gvr, err := w.mapper.ResourceFor(schema.GroupVersionResource{Group: item.Group, Resource: item.Resource})
		if err != nil {
			return false, fmt.Errorf("resource %s: %w", item.GroupResource, err)
		}
		obj, err := w.client.Resource(gvr).Namespace(item.Namespace).Get(ctx, item.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			w.log.Debug("not there yet", "item", item.String())
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("getting %s: %w", item, err)
		}
		if obj.GetAnnotations()[readyFlag] == "false" {
			w.log.Debug("not ready yet", "item", item.String())
			return false, nil
		}
	}
	return true, nil
}
