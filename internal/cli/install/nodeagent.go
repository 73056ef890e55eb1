package install

import (
	"fmt"
	"path"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/salvor-dev/salvor/internal/cli/nodeagent"
	"github.com/salvor-dev/salvor/internal/datamover"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// NodeAgentAccount is the node agent's ServiceAccount. NodeAgentRules are
// what it may do in the server's namespace: follow the PodVolumeBackups
// and PodVolumeRestores (of its node: it filters), report on their
// status, and read the location and the Secrets of its credentials and
// repository password when one starts. NodeAgentClusterRules are what it reads of the
// pods it backs up: the pod, its claim and the claim's volume, to find
// the volume's directory on the node.
const NodeAgentAccount = "salvor-node-agent"

var (
	NodeAgentRules = []rbacv1.PolicyRule{
		{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"podvolumebackups", "podvolumerestores"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"podvolumebackups/status", "podvolumerestores/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"backupstoragelocations"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
	}
	NodeAgentClusterRules = []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "persistentvolumeclaims", "persistentvolumes"}, Verbs: []string{"get"}},
	}
)

// NodeAgentCapabilities are the node agent's only capabilities: reading
// any file (backups), and writing files as their owners had them
// (restores: chown, and chmod and utimes of files it does not own, into
// directories it does not own).
var NodeAgentCapabilities = []corev1.Capability{"DAC_READ_SEARCH", "CHOWN", "DAC_OVERRIDE", "FOWNER"}

// DefaultKubeletRoot is where kubelets keep their pods' directories unless
// configured otherwise (--kubelet-root-dir, Velero's flag).
const DefaultKubeletRoot = "/var/lib/kubelet"

// nodeAgent returns the node agent's objects: its account, its rights
// and its DaemonSet, which also mounts fs (filesystemLocations: the
// directory of filesystem locations' kopia repositories, which the agent
// writes pods' volume data into), if given.
func (o Options) nodeAgent(labels map[string]string, pullSecrets []corev1.LocalObjectReference, fs hostDirMount) ([]any, error) {
	if o.NodeAgentConcurrency < 0 {
		return nil, fmt.Errorf("--node-agent-concurrency %d: must be at least 1 (0: the agent's default, 1)", o.NodeAgentConcurrency)
	}
	root := o.KubeletRoot
	if root == "" {
		root = DefaultKubeletRoot
	}
	if !path.IsAbs(root) {
		return nil, fmt.Errorf("--kubelet-root-dir %q: must be an absolute path", root)
	}
	ns := o.Namespace
	agentLabels := map[string]string{"app.kubernetes.io/name": "salvor", datamover.ComponentLabel: datamover.NodeAgentComponent}
	args := []string{"node-agent", "server", "--namespace", ns, "--host-pods", nodeagent.HostPodsPath,
		"--host-pods-writable", nodeagent.HostPodsWritablePath, "--work-dir", "/tmp/salvor-node-agent"}
	if o.NodeAgentConcurrency > 0 {
		args = append(args, "--concurrency", fmt.Sprint(o.NodeAgentConcurrency))
	}
	clusterName := "salvor-node-agent-" + ns
	propagation := corev1.MountPropagationHostToContainer
	hostDir := corev1.HostPathDirectory
	return []any{
		&corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: metav1.ObjectMeta{Name: NodeAgentAccount, Namespace: ns, Labels: labels},
			ImagePullSecrets: pullSecrets},
		&rbacv1.Role{TypeMeta: tm("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: metav1.ObjectMeta{Name: NodeAgentAccount, Namespace: ns, Labels: labels}, Rules: NodeAgentRules},
		&rbacv1.RoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: metav1.ObjectMeta{Name: NodeAgentAccount, Namespace: ns, Labels: labels},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: NodeAgentAccount},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: NodeAgentAccount, Namespace: ns}}},
		clusterRole(clusterName, labels, NodeAgentClusterRules),
		&rbacv1.ClusterRoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ObjectMeta: metav1.ObjectMeta{Name: clusterName, Labels: labels},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: clusterName},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: NodeAgentAccount, Namespace: ns}}},
		&appsv1.DaemonSet{TypeMeta: tm("apps/v1", "DaemonSet"), ObjectMeta: metav1.ObjectMeta{Name: "node-agent", Namespace: ns, Labels: merged(labels, agentLabels)},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: agentLabels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: merged(agentLabels, o.PodLabels), Annotations: o.PodAnnotations},
					Spec: corev1.PodSpec{
						ServiceAccountName: NodeAgentAccount,
						PriorityClassName:  o.PriorityClassName,
						NodeSelector:       map[string]string{corev1.LabelOSStable: "linux"},
						ImagePullSecrets:   pullSecrets,
						Containers: []corev1.Container{{
							Name:  "node-agent",
							Image: o.Image,
							Args:  args,
							Env: []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{
								FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
							VolumeMounts: append([]corev1.VolumeMount{
								// Read-only for backups, read-write for restores (which
								// write into restored pods' volumes); HostToContainer:
								// volumes the kubelet mounts after the agent started
								// are seen.
								{Name: "host-pods", MountPath: nodeagent.HostPodsPath, ReadOnly: true, MountPropagation: &propagation},
								{Name: "host-pods", MountPath: nodeagent.HostPodsWritablePath, MountPropagation: &propagation},
								{Name: "scratch", MountPath: "/tmp"},
							}, fs.mounts...),
							// Root with only the rights to read every file and
							// directory (pods' files belong to any user), and to
							// write restored ones with their owners, modes and
							// times: no other capability, no privilege.
							SecurityContext: &corev1.SecurityContext{
								RunAsUser: ptr(int64(0)), RunAsNonRoot: ptr(false),
								AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true),
								Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: NodeAgentCapabilities},
							},
						}},
						Volumes: append([]corev1.Volume{
							{Name: "host-pods", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path.Join(root, "pods"), Type: &hostDir}}},
							{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						}, fs.volumes...),
					},
				},
			}},
	}, nil
}
