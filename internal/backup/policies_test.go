package backup

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestRunStopsWhenItsPoliciesChanged: a run no validation prepared (one
// started again after a server restart, ForRun with no Prepared) reads the
// backup's resource policies itself, and their ConfigMap is gone, or no
// longer holds policies. The run stops before it writes anything (the
// store is nil: touching it would panic) rather than back up otherwise
// than asked, and says why.
func TestRunStopsWhenItsPoliciesChanged(t *testing.T) {
	cfg := testbed.SharedControlPlane(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "salvor"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("salvor").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rewritten"},
		Data: map[string]string{"policies.yaml": "version: v1\nvolumePolicies: [{conditions: {}, action: {type: custom}}]"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := &Engine{Dynamic: dynamic.NewForConfigOrDie(cfg), REST: listClient(t, cfg), Discovery: discovery.NewDiscoveryClientForConfigOrDie(cfg)}
	for name, want := range map[string]string{
		"gone":      "backup nightly: spec.resourcePolicy: resource policies configmap salvor/gone does not exist",
		"rewritten": "backup nightly: resource policies configmap salvor/rewritten: volumePolicies[0]: action custom: Salvor runs no custom volume actions",
	} {
		b := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "salvor"},
			Spec: salvorv1.BackupSpec{ResourcePolicy: &corev1.TypedLocalObjectReference{Kind: "configmap", Name: name}}}
		out, err := e.Run(ctx, b, nil, slog.New(slog.DiscardHandler), nil)
		if err == nil || !strings.HasPrefix(err.Error(), want) || out != nil {
			t.Errorf("%s: outcome %v, error %v; want none and %q", name, out, err, want)
		}
	}
}
