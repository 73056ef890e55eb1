package restore

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/salvor-dev/salvor/internal/modifiers"
)

// ConfigMapData is a modifiers.Getter over a dynamic client.
func ConfigMapData(dyn dynamic.Interface) modifiers.Getter {
	return func(ctx context.Context, namespace, name string) (map[string]string, error) {
		u, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		data, _, err := unstructured.NestedStringMap(u.Object, "data")
		return data, err
	}
}

// loadModifiers reads the restore's resource modifier rules. Validation
// has read them once already; problems here mean the ConfigMap changed
// since, and the restore stops before it makes anything.
func (r *run) loadModifiers(ctx context.Context) error {
	rules, problems, err := modifiers.Load(ctx, ConfigMapData(r.e.Dynamic), r.restore.Namespace, r.restore.Spec.ResourceModifier)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	r.modifiers = rules
	return nil
}
