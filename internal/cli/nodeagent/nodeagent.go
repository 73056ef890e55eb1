package nodeagent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/nodeagent"
)

// HostPodsPath is where the node agent's pod has the node's kubelet pods
// directory (/var/lib/kubelet/pods) mounted read-only, for backups, and
// HostPodsWritablePath where it has it read-write, for restores.
const (
	HostPodsPath         = "/host_pods"
	HostPodsWritablePath = "/host_pods_rw"
)

// NewCommand returns `salvor node-agent`.
func NewCommand(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node-agent",
		Short: "Back up pod volumes' files on this node (run by the node agent's DaemonSet)",
		Long: `Runs in the node agent's pods, one per node, that salvor install --use-node-agent
(or the chart's nodeAgent.enabled) makes: "server" copies the files of the pod
volumes on its node that backups ask for (PodVolumeBackups in the server's
namespace) into the location's kopia repository for the pod's namespace, and
writes them back into restored pods (PodVolumeRestores); "restore-wait" is the
init container a restored pod waits in until its volumes are written. There is
no need to run either by hand.`,
	}
	cmd.AddCommand(serverCommand(k), waitCommand())
	return cmd
}

func serverCommand(k *kube.Options) *cobra.Command {
	a := &nodeagent.Agent{}
	o := &serverOptions{agent: a, restorer: &nodeagent.Restorer{Agent: a}}
	cmd := &cobra.Command{
		Use:     "server",
		Short:   "Serve the PodVolumeBackups of the pods on this node",
		Example: "  # as the node agent's DaemonSet runs it (NODE_NAME from the pod's spec.nodeName)\n  salvor node-agent server --namespace salvor --node $NODE_NAME",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.complete(os.Getenv); err != nil {
				return err
			}
			return o.run(cmd.Context(), k, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&a.Node, "node", "", "the node this agent serves (default: $NODE_NAME)")
	f.StringVar(&a.HostPods, "host-pods", HostPodsPath, "where the node's kubelet pods directory (/var/lib/kubelet/pods) is mounted")
	f.StringVar(&o.restorer.HostPodsWritable, "host-pods-writable", HostPodsWritablePath, "where the node's kubelet pods directory is mounted read-write, for restores")
	f.StringVar(&a.WorkDir, "work-dir", "/tmp/salvor-node-agent", "a writable directory for kopia's caches")
	f.IntVar(&a.Concurrency, "concurrency", 1, "pod volumes backed up, and as many restored, at once on this node")
	return cmd
}

// serverOptions are `node-agent server`'s: the agent that backs up the
// node's pod volumes and the restorer that writes them back, as the
// flags set them.
type serverOptions struct {
	agent    *nodeagent.Agent
	restorer *nodeagent.Restorer
}

// complete takes the node from the pod ($NODE_NAME) when --node is not
// given, and checks, before the agent connects to anything, that the
// node's pods directory is mounted where the flags say and the work
// directory can be made.
func (o *serverOptions) complete(getenv func(string) string) error {
	a := o.agent
	if a.Node == "" {
		a.Node = getenv("NODE_NAME")
	}
	if a.Node == "" {
		return fmt.Errorf("--node: name the node this agent runs on (the pod's spec.nodeName, given as NODE_NAME)")
	}
	if fi, err := os.Stat(a.HostPods); err != nil || !fi.IsDir() {
		return fmt.Errorf("--host-pods %s: the node's kubelet pods directory must be mounted there (%v)", a.HostPods, notDir(fi, err))
	}
	if fi, err := os.Stat(o.restorer.HostPodsWritable); err != nil || !fi.IsDir() {
		return fmt.Errorf("--host-pods-writable %s: the node's kubelet pods directory must be mounted there read-write, for restores (%v)", o.restorer.HostPodsWritable, notDir(fi, err))
	}
	if err := os.MkdirAll(a.WorkDir, 0o700); err != nil {
		return fmt.Errorf("--work-dir: %w", err)
	}
	return nil
}

// notDir says why a path stat'ed is not a directory.
func notDir(fi os.FileInfo, err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("%s is not a directory", fi.Name())
}

// run serves the PodVolumeBackups and PodVolumeRestores of the agent's
// namespace until ctx ends.
func (o *serverOptions) run(ctx context.Context, k *kube.Options, logs io.Writer) error {
	handler := slog.NewTextHandler(logs, nil)
	// controller-runtime's own messages (a watch failing, a reconcile's
	// error) go to the agent's log: unset, it drops them and says so once.
	ctrl.SetLogger(logr.FromSlogHandler(handler))
	cfg, err := k.RESTConfig()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  kube.Scheme(),
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{k.Namespace: {}}},
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return fmt.Errorf("creating the controller manager: %w", err)
	}
	a := o.agent
	a.Client, a.Reader, a.Namespace = mgr.GetClient(), mgr.GetAPIReader(), k.Namespace
	a.Log = slog.New(handler).With("node", a.Node)
	if err := a.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := o.restorer.SetupWithManager(mgr); err != nil {
		return err
	}
	a.Log.Info("node agent started", "namespace", k.Namespace, "concurrency", max(a.Concurrency, 1))
	return mgr.Start(ctx)
}

func waitCommand() *cobra.Command {
	var uid, dir string
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "restore-wait --restore-uid UID",
		Short: "Wait until each volume mounted under --dir is restored (a restored pod's init container)",
		Long: `Runs as the first init container of a pod a restore makes whose volumes' files
are restored by the node agent: each volume is mounted under --dir, and the
command returns once every one holds the agent's marker for this restore
(.velero/UID, as Velero's restore helper waits for), which it then removes.
Until then the pod's own containers do not start.`,
		Example: "  # as a restored pod's init container runs it\n  salvor node-agent restore-wait --restore-uid 5f0c... --dir /restores",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if uid == "" || strings.ContainsAny(uid, "/\\") || uid == "." || uid == ".." {
				return fmt.Errorf("--restore-uid %q: give the restore's UID", uid)
			}
			return nodeagent.WaitRestored(cmd.Context(), dir, uid, every, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&uid, "restore-uid", "", "the UID of the restore whose marker each volume must hold")
	f.StringVar(&dir, "dir", "/restores", "the directory the volumes are mounted under, one directory each")
	f.DurationVar(&every, "interval", 250*time.Millisecond, "how often the volumes are looked at")
	return cmd
}
