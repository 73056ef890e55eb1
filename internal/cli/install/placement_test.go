package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPlacement: the server's pod stays on Linux nodes unless the
// selector names the OS; tolerations, affinity and pull secrets are taken
// as given; and each malformed one is refused naming its flag.
func TestPlacement(t *testing.T) {
	dir := t.TempDir()
	affinity := filepath.Join(dir, "affinity.yaml")
	if err := os.WriteFile(affinity, []byte("nodeAffinity:\n  requiredDuringSchedulingIgnoredDuringExecution:\n    nodeSelectorTerms:\n    - matchExpressions:\n      - {key: node-role.kubernetes.io/infra, operator: Exists}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	typo := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(typo, []byte("nodeAfinity: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	spec, err := Options{}.placement()
	if err != nil || len(spec.NodeSelector) != 1 || spec.NodeSelector["kubernetes.io/os"] != "linux" || spec.Tolerations != nil || spec.Affinity != nil || spec.ImagePullSecrets != nil {
		t.Errorf("defaults: %+v, %v", spec, err)
	}
	spec, err = Options{NodeSelector: map[string]string{"role": "infra", "kubernetes.io/os": "windows"}, Tolerations: []string{"dedicated=infra:NoSchedule", "spot"},
		AffinityFile: affinity, ImagePullSecrets: []string{"registry", "mirror"}}.placement()
	if err != nil {
		t.Fatal(err)
	}
	if spec.NodeSelector["kubernetes.io/os"] != "windows" || spec.NodeSelector["role"] != "infra" {
		t.Errorf("node selector %v", spec.NodeSelector)
	}
	if len(spec.Tolerations) != 2 || spec.Tolerations[0] != (corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "infra", Effect: corev1.TaintEffectNoSchedule}) ||
		spec.Tolerations[1] != (corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists}) {
		t.Errorf("tolerations %+v", spec.Tolerations)
	}
	if a := spec.Affinity; a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Key != "node-role.kubernetes.io/infra" {
		t.Errorf("affinity %+v", a)
	}
	if len(spec.ImagePullSecrets) != 2 || spec.ImagePullSecrets[0].Name != "registry" || spec.ImagePullSecrets[1].Name != "mirror" {
		t.Errorf("pull secrets %+v", spec.ImagePullSecrets)
	}

	for _, tc := range []struct {
		o    Options
		says string
	}{
		{Options{NodeSelector: map[string]string{"bad key!": "x"}}, "--node-selector bad key!: not a label key"},
		{Options{NodeSelector: map[string]string{"role": "not a value"}}, "--node-selector role=not a value: not a label value"},
		{Options{Tolerations: []string{"key:Sometimes"}}, `--tolerations: toleration "key:Sometimes": effect "Sometimes"`},
		{Options{AffinityFile: typo}, "--affinity-file " + typo + ": not a pod's affinity"},
		{Options{AffinityFile: filepath.Join(dir, "absent")}, "--affinity-file: open"},
		{Options{ImagePullSecrets: []string{"Registry_1"}}, `--image-pull-secrets "Registry_1": not a Secret's name`},
	} {
		if _, err := tc.o.placement(); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.says)
		}
	}
}
