package install

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/salvor-dev/salvor/config/crd"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/datamover"
	"github.com/salvor-dev/salvor/internal/kopiarepo"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Options are install's flags.
type Options struct {
	Namespace      string
	Image          string
	Plugins        []string
	ServiceAccount string
	Replicas       int32
	Provider       string
	Bucket         string
	Prefix         string
	Config         map[string]string
	SecretFile     string
	LeaderElect    bool
	CPURequest     string
	MemoryRequest  string
	CPULimit       string
	MemoryLimit    string
	SpoolSize      string
	TestRestores   bool
	ExecHooks      bool
	// Tenants runs the server with --tenants and installs what it needs
	// (TenantObjects, TenantServerRules).
	Tenants bool
	DryRun  bool
	Output  string
	Wait    bool
	Timeout time.Duration
	// Velero's install flags.
	SAAnnotations      map[string]string
	PodAnnotations     map[string]string
	PodLabels          map[string]string
	SnapshotConfig     map[string]string
	UseVolumeSnapshots *bool // nil: as --snapshot-location-config says
	NoDefaultLocation  bool
	NoSecret           bool
	CACertFile         string
	CRDsOnly           bool
	PriorityClassName  string
	ConcurrentBackups  int  // 0: the server's default
	ScheduleSkip       bool // the server's --schedule-skip-immediately
	// The server's --data-mover-* flags (zero: its defaults); the mover
	// image is always the server's own.
	MoverConcurrency int
	MoverPerNode     int
	// UseNodeAgent installs the node agent (file-system backup), with
	// NodeAgentConcurrency pod volumes at once per node (0: its default)
	// and the kubelets' root directory (empty: /var/lib/kubelet).
	UseNodeAgent         bool
	NodeAgentConcurrency int
	KubeletRoot          string
	// FilesystemLocationDir is a host directory mounted at the same path
	// into the server's pod and the node agent's, for filesystem locations
	// (empty: none).
	FilesystemLocationDir string
	UploaderType          string // Velero's flag: kopia, the only one
	// DefaultVolumesToFsBackup is the server's --default-volumes-to-fs-backup.
	DefaultVolumesToFsBackup bool
	// RepoMaintain, KeepMaintenanceJobs and RepoSafety are the server's
	// repository maintenance flags (zero: its defaults).
	RepoMaintain        time.Duration
	KeepMaintenanceJobs int
	RepoSafety          string
	MoverNodeSelector   map[string]string
	MoverCacheSize      string
	MoverTolerations    []string
	// MoverResources are the mover pods' CPU and memory requests, then
	// limits (empty for none).
	MoverResources [4]string
	// Where the server's pod may run (it is always kept to Linux nodes
	// unless NodeSelector names kubernetes.io/os), and the Secrets its
	// images and mover pods' images are pulled with.
	NodeSelector     map[string]string
	Tolerations      []string
	AffinityFile     string
	ImagePullSecrets []string
	// ServerRules are the server's cluster-wide rights (ServerRules, from
	// the cluster's discovery).
	ServerRules []rbacv1.PolicyRule
}

// NewCommand returns `salvor install`.
func NewCommand(k *kube.Options) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install Salvor into a cluster (or print its manifests)",
		Long: `Writes what a cluster needs to run Salvor: the CRDs, the namespace, a
service account with least-privilege RBAC, the server Deployment (leader
election on) with each plugin image as an init container that copies its
binary into the plugin directory, and, with --provider and --bucket, a default
backup storage location. With --dry-run it prints the manifests instead.`,
		Example: `  salvor install --dry-run -o yaml
  salvor install --image ghcr.io/salvor-dev/salvor:v0.1.0 --plugins example.io/my-plugins:v1 \
      --provider salvor.dev/s3 --bucket backups --config region=us-east-1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Namespace = k.Namespace
			if !o.CRDsOnly {
				var err error
				if o.ServerRules, err = serverRules(k, o.DryRun, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			objs, err := Manifests(*o)
			if err != nil {
				return err
			}
			if o.DryRun {
				return Print(cmd.OutOrStdout(), objs, o.Output)
			}
			c, err := k.Client()
			if err != nil {
				return err
			}
			if err := Apply(cmd.Context(), c, objs, cmd.OutOrStdout()); err != nil || !o.Wait {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.Timeout)
			defer cancel()
			return Ready(ctx, c, objs, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Image, "image", "ghcr.io/salvor-dev/salvor:latest", "the salvor server image")
	f.StringSliceVar(&o.Plugins, "plugins", nil, "plugin images, each run as an init container that copies its binary into /target")
	f.StringVar(&o.ServiceAccount, "service-account-name", "salvor", "the server's service account")
	f.Int32Var(&o.Replicas, "replicas", 1, "server replicas (one leads at a time)")
	f.StringVar(&o.Provider, "provider", "", "with --bucket: create a default backup storage location on this object store plugin")
	f.StringVar(&o.Bucket, "bucket", "", "the default location's bucket")
	f.StringVar(&o.Prefix, "prefix", "", "the default location's prefix")
	f.StringToStringVar(&o.Config, "config", nil, "the default location's plugin config, key=value pairs")
	f.StringVar(&o.SecretFile, "secret-file", "", "a file of object store credentials (for salvor.dev/s3, an AWS credentials file): stored as Secret cloud-credentials, key cloud, which the default location names as its credential (Velero's flag)")
	f.BoolVar(&o.LeaderElect, "leader-elect", true, "run the server with leader election (one replica works at a time)")
	f.StringVar(&o.CPURequest, "server-cpu-request", DefaultCPURequest, "the server's CPU request (empty for none)")
	f.StringVar(&o.MemoryRequest, "server-memory-request", DefaultMemoryRequest, "the server's memory request (empty for none)")
	f.StringVar(&o.CPULimit, "server-cpu-limit", "", "the server's CPU limit (empty for none)")
	f.StringVar(&o.MemoryLimit, "server-memory-limit", DefaultMemoryLimit, "the server's memory limit (empty for none)")
	f.StringVar(&o.SpoolSize, "spool-size", "", "the size limit of the server's scratch volume, where restores spool a backup's items (empty for no limit)")
	f.BoolVar(&o.TestRestores, "test-restores", false, "let the server delete namespaces, which test restores (salvor backup verify --restore-into-prefix, a schedule's spec.verify.restoreIntoPrefix) need to remove what they restored (a ClusterRole of its own; the server deletes only namespaces its test restores made)")
	f.BoolVar(&o.Tenants, "tenants", false, "let teams back up and restore their own namespaces (the server's --tenants): installs the salvor-tenant ClusterRole to bind per namespace, the salvor-requester admission policies that record who made a namespace's Backups and Restores (Kubernetes 1.36 or later), and the server's rights over those objects in every namespace (docs/self-service.md)")
	f.BoolVar(&o.ExecHooks, "exec-hooks", false, "let the server run commands in pods (pods/exec) and watch pods, which the exec hooks of backups (spec.hooks, pre.hook.backup.velero.io/command) and restores (spec.hooks postHooks exec, post.hook.restore.velero.io/command) need (a ClusterRole of its own; the right reaches a shell in every pod)")
	f.DurationVar(&o.RepoMaintain, "default-repo-maintain-frequency", 0, "how often kopia's maintenance runs on each repository of moved volume data (the server's flag; default 1h) (Velero's flag)")
	f.IntVar(&o.KeepMaintenanceJobs, "keep-latest-maintenance-jobs", 0, "finished maintenance Jobs kept per repository (the server's flag; default 3) (Velero's flag)")
	f.StringVar(&o.RepoSafety, "repo-maintenance-safety", "", "full or none: how maintenance frees deleted backups' volume data (the server's flag; default full)")
	f.IntVar(&o.MoverConcurrency, "data-mover-concurrency", 0, "volume uploads the server runs at once, and as many downloads (its --data-mover-concurrency; default 4)")
	f.IntVar(&o.MoverPerNode, "data-mover-concurrency-per-node", 0, "mover pods that run at once on one node (the server's --data-mover-concurrency-per-node; 0: no limit per node)")
	f.StringToStringVar(&o.MoverNodeSelector, "data-mover-node-selector", nil, "labels of the nodes mover pods may run on (the server's --data-mover-node-selector)")
	f.StringVar(&o.MoverCacheSize, "data-mover-cache-size", "", "the size of a mover pod's kopia cache volume (the server's --data-mover-cache-size; default 1Gi)")
	f.StringSliceVar(&o.MoverTolerations, "data-mover-tolerations", nil, "taints mover pods tolerate, KEY[=VALUE][:EFFECT] (the server's --data-mover-tolerations)")
	f.StringVar(&o.MoverResources[0], "data-mover-cpu-request", "", "mover pods' CPU request (the server's --data-mover-cpu-request; empty for none)")
	f.StringVar(&o.MoverResources[1], "data-mover-memory-request", "", "mover pods' memory request (the server's --data-mover-memory-request; empty for none)")
	f.StringVar(&o.MoverResources[2], "data-mover-cpu-limit", "", "mover pods' CPU limit (the server's --data-mover-cpu-limit; empty for none)")
	f.StringVar(&o.MoverResources[3], "data-mover-memory-limit", "", "mover pods' memory limit (the server's --data-mover-memory-limit; empty for none)")
	f.BoolVar(&o.UseNodeAgent, "use-node-agent", false, "install the node agent, a DaemonSet that copies pod volumes' files for file-system backup (backup.velero.io/backup-volumes, --default-volumes-to-fs-backup); it reads the node's kubelet pods directory, read-only (Velero's flag)")
	f.StringVar(&o.UploaderType, "uploader-type", salvorv1.UploaderKopia, "the file-system backup's uploader: kopia, the only one (Velero's flag)")
	f.IntVar(&o.NodeAgentConcurrency, "node-agent-concurrency", 0, "with --use-node-agent: pod volumes each node agent backs up at once (default 1)")
	f.StringVar(&o.KubeletRoot, "kubelet-root-dir", "", "with --use-node-agent: the kubelets' root directory, whose pods/ the agent reads (default /var/lib/kubelet) (Velero's flag)")
	f.StringVar(&o.FilesystemLocationDir, "filesystem-location-dir", "", "a directory of every node, mounted (hostPath) at the same path into the server's pod and the node agent's, for filesystem locations (salvor.dev/filesystem) whose root is in it: one node's disk, or a shared mount every node has; the server refuses filesystem locations elsewhere (every one, without this flag), for its own disk goes with its pod")
	f.BoolVar(&o.DefaultVolumesToFsBackup, "default-volumes-to-fs-backup", false, "with --use-node-agent: copy the files of every volume of a backup's pods when the backup does not say (the server's --default-volumes-to-fs-backup) (Velero's flag)")
	f.StringToStringVar(&o.NodeSelector, "node-selector", nil, "labels of the nodes the server's pod may run on (kubernetes.io/os=linux unless this names kubernetes.io/os)")
	f.StringSliceVar(&o.Tolerations, "tolerations", nil, "taints the server's pod tolerates, KEY[=VALUE][:EFFECT]")
	f.StringVar(&o.AffinityFile, "affinity-file", "", "a YAML or JSON file of the server pod's affinity (a pod's spec.affinity)")
	f.StringSliceVar(&o.ImagePullSecrets, "image-pull-secrets", nil, "Secrets in the install namespace to pull images from a private registry with: the server's, its plugins' and its mover pods' (set on the server's and the mover's service accounts too)")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the manifests instead of applying them")
	f.StringVarP(&o.Output, "output", "o", "yaml", "with --dry-run: yaml or json")
	f.BoolVar(&o.Wait, "wait", false, "return once the server's Deployment has rolled out and is available (with --crds-only: once the CRDs are established) (Velero's flag)")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "with --wait: how long to wait")
	o.addVeleroFlags(cmd)
	return cmd
}

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

// resourceRequirements are the server container's requests and limits.
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

// Print writes the manifests as one YAML stream or a JSON list.
func Print(w io.Writer, objs []*unstructured.Unstructured, format string) error {
	if format == "json" {
		items := make([]map[string]any, len(objs))
		for i, o := range objs {
			items[i] = o.Object
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	}
	for i, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(w, "---")
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// Apply creates or updates each object with server-side apply.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, out io.Writer) error {
	for _, o := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("salvor-install"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		fmt.Fprintf(out, "%s/%s applied\n", strings.ToLower(o.GetKind()), o.GetName())
	}
	fmt.Fprintln(out, "Salvor is installed. `salvor backup-location get` shows whether the server reaches its locations.")
	return nil
}

func intstrFromString(s string) intstr.IntOrString { return intstr.FromString(s) }
