package csiplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

var (
	vpbGVR = salvorv1.GroupVersion.WithResource("volumepluginbackups")
	vprGVR = salvorv1.GroupVersion.WithResource("volumepluginrestores")
)

// snapshotHandleKey is where a VolumePluginBackup's pluginSpecific records
// the storage-side snapshot a backup took: the record a backup's deletion
// needs before it deletes a snapshot whose content has gone.
const snapshotHandleKey = "snapshotHandle"

// base is what each CSI action holds: its logger and its own connection.
type base struct {
	log  *slog.Logger
	kube *kube
}

func newBase(log *slog.Logger) base { return base{log: log, kube: &kube{}} }

// Name is the actions' name, whatever their kind.
func (base) Name() string { return Name }

// kube connects once, on first use, with the KUBECONFIG environment
// variable's kubeconfig (the server passes its own to its plugins) or
// in-cluster credentials.
type kube struct {
	once sync.Once
	dyn  dynamic.Interface
	err  error
}

// target reads an operation ID (namespace/name of the object it follows)
// and connects.
func (k *kube) target(id string) (dynamic.Interface, string, string, error) {
	ns, name, err := parseID(id)
	if err != nil {
		return nil, "", "", err
	}
	dyn, err := k.client()
	return dyn, ns, name, err
}

func (k *kube) client() (dynamic.Interface, error) {
	k.once.Do(func() {
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			k.err = fmt.Errorf("the CSI actions need the cluster (KUBECONFIG or in-cluster credentials): %w", err)
			return
		}
		cfg.QPS, cfg.Burst = 100, 200
		k.dyn, k.err = dynamic.NewForConfig(cfg)
	})
	return k.dyn, k.err
}

func mergePatch(ctx context.Context, res dynamic.ResourceInterface, name string, patch map[string]any) error {
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = res.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

// plain runs a context-taking method for its plain form, bounded by a
// minute: the SDK calls the context-taking form (with the host's deadline)
// whenever it exists, so the plain forms only satisfy the interfaces.
func plain[T any](f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return f(ctx)
}

func plainErr(f func(context.Context) error) error {
	_, err := plain(func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
	return err
}
