package install

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/salvor-dev/salvor/config/crd"
	"github.com/salvor-dev/salvor/internal/datamover"
	"github.com/salvor-dev/salvor/internal/kopiarepo"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// NamespaceRules are what the server does in its own namespace: run its
// own objects, and elect a leader.
var NamespaceRules = []rbacv1.PolicyRule{
	{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	// The data mover's pods and their claims (restored from snapshot
	// copies), made, watched and removed here only.
	{APIGroups: []string{""}, Resources: []string{"pods", "persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
	// Repository maintenance Jobs, made, watched and removed here only.
	{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
}

// MoverAccount is the ServiceAccount of the data mover's pods, and
// MoverRules all it may do: read the DataUpload or DataDownload it moves
// (or the BackupRepository it maintains) and the location it writes to,
// and report progress on their status.
// The location's credentials and the repository password come to the pod
// as Secret volumes and env the server names, so it reads no Secret.
const MoverAccount = "salvor-data-mover"

var MoverRules = []rbacv1.PolicyRule{
	{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"datauploads", "datadownloads", "backuprepositories", "backupstoragelocations"}, Verbs: []string{"get"}},
	{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"datauploads/status", "datadownloads/status", "backuprepositories/status"}, Verbs: []string{"patch"}},
}

// The server's default resources: its peak memory stays near 100 MiB for
// 100,000 items (docs/benchmarks.md); the limit leaves room for plugins.
const (
	DefaultCPURequest    = "100m"
	DefaultMemoryRequest = "128Mi"
	DefaultMemoryLimit   = "1Gi"
	// MetricsPort and HealthPort are the server's ports in its pod.
	MetricsPort = 8085
	HealthPort  = 8086
)

// CredentialsSecret and CredentialsKey are where --secret-file goes:
// Velero's names.
const (
	CredentialsSecret = "cloud-credentials"
	CredentialsKey    = "cloud"
)

// Manifests returns the objects to install, in the order to apply them.
func Manifests(o Options) ([]*unstructured.Unstructured, error) {
	if err := o.checkVelero(); err != nil {
		return nil, err
	}
	if o.CRDsOnly {
		return crds()
	}
	if len(o.ServerRules) == 0 {
		return nil, fmt.Errorf("no rules for the server's role: they come from the cluster's discovery (DiscoverServerRules)")
	}
	if o.Output != "" && o.Output != "yaml" && o.Output != "json" {
		return nil, fmt.Errorf("--output %q: must be yaml or json", o.Output)
	}
	out, err := crds()
	if err != nil {
		return nil, err
	}
	ns, sa := o.Namespace, o.ServiceAccount
	res, err := resourceRequirements(o)
	if err != nil {
		return nil, err
	}
	fs, err := o.filesystemLocations()
	if err != nil {
		return nil, err
	}
	args := []string{"server", "--namespace", ns, "--plugin-dir", "/plugins"}
	if o.LeaderElect {
		args = append(args, "--leader-elect")
	}
	if o.ConcurrentBackups > 0 {
		args = append(args, "--max-concurrent-backups", fmt.Sprint(o.ConcurrentBackups))
	}
	if o.ScheduleSkip {
		args = append(args, "--schedule-skip-immediately")
	}
	if o.Tenants {
		args = append(args, "--tenants")
	}
	// The server's disk is its pod's: filesystem locations only in the
	// directory mounted for them, if any.
	args = append(args, "--confine-filesystem-locations")
	if o.FilesystemLocationDir != "" {
		args = append(args, "--filesystem-location-dir", o.FilesystemLocationDir)
	}
	if o.DefaultVolumesToFsBackup {
		if !o.UseNodeAgent {
			return nil, fmt.Errorf("--default-volumes-to-fs-backup needs the node agent, which copies the files: add --use-node-agent")
		}
		args = append(args, "--default-volumes-to-fs-backup")
	}
	// Mover pods run the server's image (salvor data-mover).
	args = append(args, "--data-mover-image", o.Image)
	if o.MoverConcurrency > 0 {
		args = append(args, "--data-mover-concurrency", fmt.Sprint(o.MoverConcurrency))
	}
	if o.MoverPerNode < 0 {
		return nil, fmt.Errorf("--data-mover-concurrency-per-node %d: must not be negative (0: no limit per node)", o.MoverPerNode)
	}
	if o.MoverPerNode > 0 {
		args = append(args, "--data-mover-concurrency-per-node", fmt.Sprint(o.MoverPerNode))
	}
	if o.RepoMaintain < 0 || o.KeepMaintenanceJobs < 0 {
		return nil, fmt.Errorf("--default-repo-maintain-frequency and --keep-latest-maintenance-jobs must be positive")
	}
	if o.RepoMaintain > 0 {
		args = append(args, "--default-repo-maintain-frequency", o.RepoMaintain.String())
	}
	if o.KeepMaintenanceJobs > 0 {
		args = append(args, "--keep-latest-maintenance-jobs", fmt.Sprint(o.KeepMaintenanceJobs))
	}
	if o.RepoSafety != "" {
		if _, err := kopiarepo.ParseSafety(o.RepoSafety); err != nil {
			return nil, fmt.Errorf("--repo-maintenance-safety: %w", err)
		}
		args = append(args, "--repo-maintenance-safety", o.RepoSafety)
	}
	for _, k := range slices.Sorted(maps.Keys(o.MoverNodeSelector)) {
		args = append(args, "--data-mover-node-selector", k+"="+o.MoverNodeSelector[k])
	}
	if o.MoverCacheSize != "" {
		if _, err := resource.ParseQuantity(o.MoverCacheSize); err != nil {
			return nil, fmt.Errorf("--data-mover-cache-size %q: want a size such as 1Gi", o.MoverCacheSize)
		}
		args = append(args, "--data-mover-cache-size", o.MoverCacheSize)
	}
	for _, t := range o.MoverTolerations {
		if _, err := datamover.ParseToleration(t); err != nil {
			return nil, fmt.Errorf("--data-mover-tolerations: %w", err)
		}
		args = append(args, "--data-mover-tolerations", t)
	}
	if _, err := datamover.ParseResources(o.MoverResources[0], o.MoverResources[1], o.MoverResources[2], o.MoverResources[3]); err != nil {
		return nil, err
	}
	for i, flag := range []string{"--data-mover-cpu-request", "--data-mover-memory-request", "--data-mover-cpu-limit", "--data-mover-memory-limit"} {
		if o.MoverResources[i] != "" {
			args = append(args, flag, o.MoverResources[i])
		}
	}
	scratch := &corev1.EmptyDirVolumeSource{}
	if o.SpoolSize != "" {
		q, err := resource.ParseQuantity(o.SpoolSize)
		if err != nil {
			return nil, fmt.Errorf("--spool-size %q: %w", o.SpoolSize, err)
		}
		scratch.SizeLimit = &q
	}
	placement, err := o.placement()
	if err != nil {
		return nil, err
	}
	labels := map[string]string{"app.kubernetes.io/name": "salvor", "app.kubernetes.io/component": "server"}
	var inits []corev1.Container
	for i, img := range o.Plugins {
		inits = append(inits, PluginContainer(fmt.Sprintf("plugin-%d", i), img, ""))
	}
	typed := []any{
		&corev1.Namespace{TypeMeta: tm("v1", "Namespace"), ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}},
		&corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns, Labels: labels, Annotations: o.SAAnnotations},
			ImagePullSecrets: placement.ImagePullSecrets},
		&rbacv1.ClusterRole{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: metav1.ObjectMeta{Name: "salvor-server-" + ns, Labels: labels}, Rules: o.ServerRules},
		&rbacv1.ClusterRoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ObjectMeta: metav1.ObjectMeta{Name: "salvor-server-" + ns, Labels: labels},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "salvor-server-" + ns},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}},
		clusterRole("salvor-viewer", labels, ViewerRules),
		clusterRole("salvor-operator", labels, OperatorRules),
		clusterRole("salvor-metrics-reader", labels, MetricsReaderRules),
		&rbacv1.Role{TypeMeta: tm("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: metav1.ObjectMeta{Name: "salvor-server", Namespace: ns, Labels: labels}, Rules: NamespaceRules},
		&rbacv1.RoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: metav1.ObjectMeta{Name: "salvor-server", Namespace: ns, Labels: labels},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "salvor-server"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}},
		&corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: metav1.ObjectMeta{Name: MoverAccount, Namespace: ns, Labels: labels},
			ImagePullSecrets: placement.ImagePullSecrets},
		&rbacv1.Role{TypeMeta: tm("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: metav1.ObjectMeta{Name: MoverAccount, Namespace: ns, Labels: labels}, Rules: MoverRules},
		&rbacv1.RoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: metav1.ObjectMeta{Name: MoverAccount, Namespace: ns, Labels: labels},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: MoverAccount},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: MoverAccount, Namespace: ns}}},
		&appsv1.Deployment{TypeMeta: tm("apps/v1", "Deployment"), ObjectMeta: metav1.ObjectMeta{Name: "salvor", Namespace: ns, Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: &o.Replicas,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: merged(labels, o.PodLabels),
						Annotations: merged(map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": fmt.Sprint(MetricsPort), "prometheus.io/scheme": "https"}, o.PodAnnotations)},
					Spec: corev1.PodSpec{
						ServiceAccountName: sa,
						PriorityClassName:  o.PriorityClassName,
						NodeSelector:       placement.NodeSelector,
						Tolerations:        placement.Tolerations,
						Affinity:           placement.Affinity,
						ImagePullSecrets:   placement.ImagePullSecrets,
						InitContainers:     inits,
						Containers: []corev1.Container{{
							Name:      "server",
							Image:     o.Image,
							Args:      args,
							Resources: res,
							Ports:     []corev1.ContainerPort{{Name: "metrics", ContainerPort: MetricsPort}, {Name: "health", ContainerPort: HealthPort}},
							LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
								Path: "/healthz", Port: intstrFromString("health")}}},
							ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
								Path: "/readyz", Port: intstrFromString("health")}}},
							VolumeMounts: append([]corev1.VolumeMount{{Name: "plugins", MountPath: "/plugins"}, {Name: "scratch", MountPath: "/tmp"}}, fs.mounts...),
							SecurityContext: &corev1.SecurityContext{
								AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true), RunAsNonRoot: ptr(true),
								Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							},
						}},
						Volumes: append([]corev1.Volume{
							{Name: "plugins", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
							{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: scratch}},
						}, fs.volumes...),
					},
				},
			}},
		// A Service in front of the metrics port, for a ServiceMonitor or
		// any scraper that finds targets through Services.
		&corev1.Service{TypeMeta: tm("v1", "Service"), ObjectMeta: metav1.ObjectMeta{Name: "salvor-metrics", Namespace: ns, Labels: labels},
			Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "metrics", Port: MetricsPort, TargetPort: intstrFromString("metrics")}}}},
	}
	if o.UseNodeAgent {
		agent, err := o.nodeAgent(labels, placement.ImagePullSecrets, fs)
		if err != nil {
			return nil, err
		}
		typed = append(typed, agent...)
	} else if o.NodeAgentConcurrency != 0 || o.KubeletRoot != "" {
		return nil, fmt.Errorf("--node-agent-concurrency and --kubelet-root-dir configure the node agent: add --use-node-agent")
	}
	for _, extra := range []struct {
		on    bool
		name  string
		rules []rbacv1.PolicyRule
	}{{o.TestRestores, "salvor-test-restores-" + ns, TestRestoreRules}, {o.ExecHooks, "salvor-exec-hooks-" + ns, ExecHookRules},
		{o.Tenants, "salvor-tenants-" + ns, TenantServerRules}} {
		if !extra.on {
			continue
		}
		typed = append(typed, clusterRole(extra.name, labels, extra.rules),
			&rbacv1.ClusterRoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ObjectMeta: metav1.ObjectMeta{Name: extra.name, Labels: labels},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: extra.name},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}})
	}
	if o.Tenants {
		for _, obj := range TenantObjects(ns, sa, labels) {
			typed = append(typed, obj)
		}
	}
	var credential *corev1.SecretKeySelector
	if o.SecretFile != "" {
		data, err := os.ReadFile(o.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("--secret-file: %w", err)
		}
		typed = append(typed, &corev1.Secret{TypeMeta: tm("v1", "Secret"), ObjectMeta: metav1.ObjectMeta{Name: CredentialsSecret, Namespace: ns, Labels: labels},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{CredentialsKey: data}})
		credential = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: CredentialsSecret}, Key: CredentialsKey}
	}
	if o.Bucket != "" {
		config := o.Config
		if o.CACertFile != "" {
			pem, err := os.ReadFile(o.CACertFile)
			if err != nil {
				return nil, fmt.Errorf("--cacert: %w", err)
			}
			config = merged(o.Config, map[string]string{"caCert": string(pem)})
		}
		typed = append(typed, &salvorv1.BackupStorageLocation{
			TypeMeta:   tm(salvorv1.GroupVersion.String(), "BackupStorageLocation"),
			ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns, Labels: labels},
			Spec: salvorv1.BackupStorageLocationSpec{Provider: o.Provider, Config: config, Default: true, Credential: credential,
				ObjectStorage: salvorv1.ObjectStorageLocation{Bucket: o.Bucket, Prefix: o.Prefix}},
		})
	}
	if o.snapshotLocation() {
		typed = append(typed, &salvorv1.VolumeSnapshotLocation{
			TypeMeta:   tm(salvorv1.GroupVersion.String(), "VolumeSnapshotLocation"),
			ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns, Labels: labels},
			Spec:       salvorv1.VolumeSnapshotLocationSpec{Provider: o.Provider, Config: o.SnapshotConfig, Default: true, Credential: credential},
		})
	}
	for _, t := range typed {
		b, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(b, &u.Object); err != nil {
			return nil, err
		}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		out = append(out, u)
	}
	return out, nil
}

// crds are Salvor's CustomResourceDefinitions, by file name.
func crds() ([]*unstructured.Unstructured, error) {
	names, err := fs.Glob(crd.Files, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, n := range names {
		b, err := crd.Files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// resourceRequirements are the server container's requests and limits.
func resourceRequirements(o Options) (corev1.ResourceRequirements, error) {
	var r corev1.ResourceRequirements
	for _, q := range []struct {
		flag, value string
		list        *corev1.ResourceList
		name        corev1.ResourceName
	}{
		{"--server-cpu-request", o.CPURequest, &r.Requests, corev1.ResourceCPU},
		{"--server-memory-request", o.MemoryRequest, &r.Requests, corev1.ResourceMemory},
		{"--server-cpu-limit", o.CPULimit, &r.Limits, corev1.ResourceCPU},
		{"--server-memory-limit", o.MemoryLimit, &r.Limits, corev1.ResourceMemory},
	} {
		if q.value == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.value)
		if err != nil {
			return r, fmt.Errorf("%s %q: %w", q.flag, q.value, err)
		}
		if *q.list == nil {
			*q.list = corev1.ResourceList{}
		}
		(*q.list)[q.name] = v
	}
	return r, nil
}

func clusterRole(name string, labels map[string]string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

func tm(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func ptr[T any](v T) *T { return &v }
