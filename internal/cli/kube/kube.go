package kube

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/clientconfig"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Options are the global flags.
type Options struct {
	Kubeconfig string
	Context    string
	Namespace  string
}

// AddFlags binds the global flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&o.Context, "context", "", "the kubeconfig context to use (default: its current context; Velero's --kubecontext works too)")
	fs.StringVarP(&o.Namespace, "namespace", "n", "salvor", "the namespace Salvor's server and objects live in (without it: $SALVOR_NAMESPACE, else the client config's namespace, else salvor)")
}

// Defaults fills in what the flags left out: the namespace from
// $SALVOR_NAMESPACE, else from the client config (salvor client config
// set namespace=NS, as Velero's).
func (o *Options) Defaults(fs *pflag.FlagSet) error {
	if fs.Changed("namespace") {
		return nil
	}
	if ns := os.Getenv("SALVOR_NAMESPACE"); ns != "" {
		o.Namespace = ns
		return nil
	}
	ns, err := clientconfig.Get(clientconfig.Namespace)
	if ns != "" {
		o.Namespace = ns
	}
	return err
}

// Scheme knows Kubernetes' built-in types and Salvor's.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := salvorv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// RESTConfig loads the cluster's address and credentials.
func (o *Options) RESTConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return cfg, nil
}

// ShareWithPlugins points KUBECONFIG, which the server's plugin processes
// inherit, at the cluster the flags chose, so plugins that talk to the
// cluster (the built-in CSI actions, Velero's) reach the same one: the
// --kubeconfig file, with --context made its current context in a copy
// only the server can read, removed by the returned function. Without
// either flag, plugins find what the server found (KUBECONFIG,
// ~/.kube/config or in-cluster credentials).
func (o *Options) ShareWithPlugins() (func(), error) {
	if o.Kubeconfig == "" && o.Context == "" {
		return func() {}, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	raw, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	if o.Context != "" {
		raw.CurrentContext = o.Context
	}
	if err := clientcmdapi.MinifyConfig(raw); err != nil {
		return nil, fmt.Errorf("the kubeconfig's context %q: %w", raw.CurrentContext, err)
	}
	if err := clientcmdapi.FlattenConfig(raw); err != nil {
		return nil, fmt.Errorf("the kubeconfig's files: %w", err)
	}
	dir, err := os.MkdirTemp("", "salvor-kubeconfig-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "kubeconfig")
	remove := func() { os.RemoveAll(dir) }
	if err := clientcmd.WriteToFile(*raw, path); err != nil {
		remove()
		return nil, fmt.Errorf("writing the plugins' kubeconfig: %w", err)
	}
	return remove, os.Setenv("KUBECONFIG", path)
}

// Client returns a client for Salvor's and Kubernetes' objects; it can
// watch too (Changes).
func (o *Options) Client() (client.Client, error) {
	cfg, err := o.RESTConfig()
	if err != nil {
		return nil, err
	}
	return client.NewWithWatch(cfg, client.Options{Scheme: Scheme()})
}

// WithClient makes a command's RunE of a body that needs a client: the
// connection is made (or fails) before the body runs.
func (o *Options) WithClient(run func(cmd *cobra.Command, args []string, c client.Client) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := o.Client()
		if err != nil {
			return err
		}
		return run(cmd, args, c)
	}
}

// SecretKey is the --credential SECRET=KEY flag of a location: nil when
// not given (pflag refuses an empty one).
func SecretKey(flag map[string]string) (*corev1.SecretKeySelector, error) {
	if len(flag) > 1 {
		return nil, fmt.Errorf("--credential: give one SECRET=KEY")
	}
	for name, key := range flag {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}, nil
	}
	return nil, nil
}
