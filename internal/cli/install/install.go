package install

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/salvor-dev/salvor/internal/cli/kube"
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
