package install

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// serverLabels select the server's Deployment and pods, as install and the
// chart label them.
var serverLabels = client.MatchingLabels{"app.kubernetes.io/name": "salvor", "app.kubernetes.io/component": "server"}

// ServerDeployment is the server's Deployment in namespace, found by the
// labels install and the chart give it.
func ServerDeployment(ctx context.Context, c client.Client, namespace string) (*appsv1.Deployment, error) {
	list := &appsv1.DeploymentList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), serverLabels); err != nil {
		return nil, fmt.Errorf("reading the server's Deployment in %s: %w", namespace, err)
	}
	switch len(list.Items) {
	case 0:
		return nil, fmt.Errorf("no Salvor server Deployment in namespace %s (labelled app.kubernetes.io/name=salvor, app.kubernetes.io/component=server, as salvor install and the chart make it)", namespace)
	case 1:
		return &list.Items[0], nil
	}
	return nil, fmt.Errorf("%d Salvor server Deployments in namespace %s: expected one", len(list.Items), namespace)
}

// PluginContainer is the init container that copies a plugin image's
// binaries into the server's plugin directory.
func PluginContainer(name, image string, pull corev1.PullPolicy) corev1.Container {
	return corev1.Container{Name: name, Image: image, ImagePullPolicy: pull,
		VolumeMounts: []corev1.VolumeMount{{Name: "plugins", MountPath: "/target"}}}
}
