package install

import (
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/salvor-dev/salvor/internal/datamover"
)

// placement is where the server's pod may run and what it pulls its
// images with, from --node-selector, --tolerations, --affinity-file and
// --image-pull-secrets. The server is kept to Linux nodes unless the
// selector names the OS label itself: its image is built for Linux, and
// a hybrid cluster's Windows nodes would otherwise be picked and fail to
// pull it (Velero pins its server the same way).
func (o Options) placement() (corev1.PodSpec, error) {
	spec := corev1.PodSpec{NodeSelector: merged(map[string]string{corev1.LabelOSStable: "linux"}, o.NodeSelector)}
	for k, v := range o.NodeSelector {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return spec, fmt.Errorf("--node-selector %s: not a label key: %s", k, errs[0])
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return spec, fmt.Errorf("--node-selector %s=%s: not a label value: %s", k, v, errs[0])
		}
	}
	for _, t := range o.Tolerations {
		tol, err := datamover.ParseToleration(t)
		if err != nil {
			return spec, fmt.Errorf("--tolerations: %w", err)
		}
		spec.Tolerations = append(spec.Tolerations, tol)
	}
	if o.AffinityFile != "" {
		data, err := os.ReadFile(o.AffinityFile)
		if err != nil {
			return spec, fmt.Errorf("--affinity-file: %w", err)
		}
		a := &corev1.Affinity{}
		if err := yaml.UnmarshalStrict(data, a); err != nil {
			return spec, fmt.Errorf("--affinity-file %s: not a pod's affinity: %w", o.AffinityFile, err)
		}
		spec.Affinity = a
	}
	for _, name := range o.ImagePullSecrets {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return spec, fmt.Errorf("--image-pull-secrets %q: not a Secret's name: %s", name, errs[0])
		}
		spec.ImagePullSecrets = append(spec.ImagePullSecrets, corev1.LocalObjectReference{Name: name})
	}
	return spec, nil
}
