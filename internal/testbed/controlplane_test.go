package testbed_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/salvor-dev/salvor/internal/testbed"
)

func TestMain(m *testing.M) { testbed.Main(m) }

// TestSharedPlaneGivesEachTestItsNamespaces: the tests of a package get
// one control plane, and a namespace of their own on it each time they
// ask — a valid name drawn from the test's, whatever the test is called.
func TestSharedPlaneGivesEachTestItsNamespaces(t *testing.T) {
	first := testbed.SharedControlPlane(t)
	var names []string
	for _, name := range []string{"plain", "Odd/Name with SPACES & more", strings.Repeat("long", 30)} {
		t.Run(name, func(t *testing.T) {
			cfg := testbed.SharedControlPlane(t)
			if cfg.Host != first.Host {
				t.Fatalf("a second control plane: %s, then %s", first.Host, cfg.Host)
			}
			a, b := testbed.Namespace(t, cfg), testbed.Namespace(t, cfg)
			names = append(names, a, b)
			cs := kubernetes.NewForConfigOrDie(cfg)
			for _, ns := range []string{a, b} {
				if errs := validation.IsDNS1123Label(ns); len(errs) != 0 {
					t.Errorf("namespace %q: %v", ns, errs)
				}
				if _, err := cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); err != nil {
					t.Errorf("namespace %s: %v", ns, err)
				}
			}
		})
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("namespace %s handed out twice: %v", n, names)
		}
		seen[n] = true
	}
	if len(seen) != 6 {
		t.Errorf("namespaces %v", names)
	}
}
