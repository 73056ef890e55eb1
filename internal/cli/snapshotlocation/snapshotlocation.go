package snapshotlocation

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/get"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	"github.com/salvor-dev/salvor/internal/cli/version"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/kind"
)

// NewCommand returns `salvor snapshot-location`.
func NewCommand(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{Use: "snapshot-location", Aliases: []string{"snapshot-locations", "vsl"}, Short: "Work with volume snapshot locations"}
	cmd.AddCommand(newCreate(k), newGet(k), newSet(k), newDelete(k))
	return cmd
}

// createOptions are `salvor snapshot-location create`'s flags: bound,
// turned into a VolumeSnapshotLocation with no cluster (location), then
// sent (run).
type createOptions struct {
	provider   string
	config     map[string]string
	credential map[string]string
	labels     map[string]string
	isDefault  bool
	format     output.Format
}

func newCreate(k *kube.Options) *cobra.Command {
	o := &createOptions{}
	cmd := &cobra.Command{
		Use:     "create NAME --provider P",
		Short:   "Create a volume snapshot location",
		Example: "  salvor snapshot-location create local --provider salvor.dev/local-volume --config snapshotDir=/var/lib/salvor/snapshots --default",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			vsl, err := o.location(k.Namespace, args[0])
			if err != nil {
				return err
			}
			return o.run(cmd, k, vsl)
		},
	}
	o.bind(cmd.Flags())
	return cmd
}

// bind registers the flags, Velero's among them, on f.
func (o *createOptions) bind(f *pflag.FlagSet) {
	f.StringVar(&o.provider, "provider", "", "VolumeSnapshotter plugin")
	f.StringToStringVar(&o.config, "config", nil, "plugin config as key=value pairs, comma-separated")
	f.BoolVar(&o.isDefault, "default", false, "use this location for backups that name none")
	f.StringToStringVar(&o.credential, "credential", nil, "SECRET=KEY: the key of a Secret in Salvor's namespace holding the snapshotter's credentials (Velero's flag); the server passes it to the plugin as credentialsFile")
	f.StringToStringVar(&o.labels, "labels", nil, "labels to apply, KEY=VALUE,... (Velero's flag)")
	kube.AddPrintFlag(f, &o.format)
}

// location is the VolumeSnapshotLocation the flags describe, or what to
// fix in them.
func (o *createOptions) location(namespace, name string) (*salvorv1.VolumeSnapshotLocation, error) {
	if o.provider == "" {
		return nil, fmt.Errorf("--provider is required: the VolumeSnapshotter plugin, e.g. salvor.dev/local-volume")
	}
	secret, err := kube.SecretKey(o.credential)
	if err != nil {
		return nil, err
	}
	return &salvorv1.VolumeSnapshotLocation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: o.labels},
		Spec:       salvorv1.VolumeSnapshotLocationSpec{Provider: o.provider, Config: o.config, Default: o.isDefault, Credential: secret},
	}, nil
}

// run prints vsl (-o) or checks its provider against the server's plugins
// and creates it, making it the only default when it is one.
func (o *createOptions) run(cmd *cobra.Command, k *kube.Options, vsl *salvorv1.VolumeSnapshotLocation) error {
	c, err := k.Client()
	if err != nil {
		return err
	}
	if printed, err := kube.Print(cmd.OutOrStdout(), c, o.format, vsl, nil); printed || err != nil {
		return err
	}
	status, err := version.AskServer(cmd.Context(), k, serverWait)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: provider %s not checked: %v; `salvor snapshot-location get %s` shows whether the server can use it\n", o.provider, err, vsl.Name)
	} else if msg := unknownProvider(o.provider, status.Plugins); msg != "" {
		return fmt.Errorf("volume snapshot location %s: %s", vsl.Name, msg)
	}
	if err := c.Create(cmd.Context(), vsl); err != nil {
		return fmt.Errorf("creating volume snapshot location %s: %w", vsl.Name, err)
	}
	// Only once the new location exists does any other stop being the
	// default: a create that fails changes nothing.
	if o.isDefault {
		if err := clearDefault(cmd.Context(), c, vsl.Namespace, vsl.Name); err != nil {
			return err
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Volume snapshot location %q created.\n", vsl.Name)
	return nil
}

// serverWait is how long create waits for the server to say which
// VolumeSnapshotters it runs.
var serverWait = 5 * time.Second

// unknownProvider says why no VolumeSnapshotter of the server's plugins
// is provider ("" when one is), naming those it has. A name without a
// domain means velero.io/<name>, as the server reads it.
func unknownProvider(provider string, plugins []salvorv1.PluginInfo) string {
	full := provider
	if !strings.Contains(full, "/") {
		full = "velero.io/" + full
	}
	var have []string
	for _, p := range plugins {
		if !strings.HasPrefix(p.Kind, string(kind.VolumeSnapshotter)) {
			continue
		}
		if p.Name == full {
			return ""
		}
		if !slices.Contains(have, p.Name) {
			have = append(have, p.Name)
		}
	}
	sort.Strings(have)
	runs := "none"
	if len(have) > 0 {
		runs = strings.Join(have, ", ")
	}
	return fmt.Sprintf("the server runs no VolumeSnapshotter plugin named %s (its VolumeSnapshotters: %s): fix --provider, or add the plugin's image first (salvor plugin add IMAGE)", full, runs)
}

func newGet(k *kube.Options) *cobra.Command {
	return get.Command[salvorv1.VolumeSnapshotLocation](k, "volumesnapshotlocation", "List volume snapshot locations",
		"  salvor snapshot-location get\n  salvor snapshot-location get default -o yaml",
		&salvorv1.VolumeSnapshotLocationList{}, get.Table[salvorv1.VolumeSnapshotLocation]{
			Header: []string{"NAME", "PROVIDER", "PHASE", "DEFAULT", "MESSAGE"},
			Row: func(v *salvorv1.VolumeSnapshotLocation) []string {
				def := ""
				if v.Spec.Default {
					def = "true"
				}
				// A location no server has checked yet shows as Unknown,
				// as backup locations do.
				return []string{v.Name, v.Spec.Provider, output.Or(string(v.Status.Phase), "Unknown"), def, output.Or(v.Status.Message, "-")}
			},
			WideHeader: []string{"CONFIG"},
			WideRow: func(v *salvorv1.VolumeSnapshotLocation) []string {
				config := make([]string, 0, len(v.Spec.Config))
				for k, val := range v.Spec.Config {
					config = append(config, k+"="+val)
				}
				sort.Strings(config)
				return []string{output.Or(strings.Join(config, ","), "-")}
			},
		})
}

// setOptions are `snapshot-location set`'s flags. The location's new spec
// is a function of them and the current one (change), judged before the
// location is read (complete), so a bad flag changes nothing.
type setOptions struct {
	config      map[string]string
	clearConfig []string
	isDefault   bool
	credential  map[string]string

	flags  *pflag.FlagSet
	secret *corev1.SecretKeySelector // from --credential
}

func newSet(k *kube.Options) *cobra.Command {
	o := &setOptions{}
	cmd := &cobra.Command{
		Use:   "set NAME",
		Short: "Change a volume snapshot location: its config, credential or whether it is the default",
		Long: `Changes a location in place. --config sets the given keys and keeps the
others (--unset-config removes keys); the provider is fixed: create another
location for another plugin. Snapshots taken before the change are deleted,
with their backups, with the config the location has then.`,
		Example: "  salvor snapshot-location set local --default\n  salvor snapshot-location set local --config bytesPerSecond=50000000",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(cmd.Flags()); err != nil {
				return err
			}
			return o.run(cmd, k, args[0])
		},
	}
	o.bind(cmd.Flags())
	return cmd
}

func (o *setOptions) bind(f *pflag.FlagSet) {
	f.BoolVar(&o.isDefault, "default", false, "make this the default location (unsets any other), or --default=false to unset it")
	f.StringToStringVar(&o.config, "config", nil, "plugin config keys to set, key=value pairs")
	f.StringSliceVar(&o.clearConfig, "unset-config", nil, "plugin config keys to remove")
	f.StringToStringVar(&o.credential, "credential", nil, "SECRET=KEY: the Secret key holding the snapshotter's credentials (Velero's flag)")
}

// complete checks every flag before anything is read from or written to
// the cluster.
func (o *setOptions) complete(f *pflag.FlagSet) error {
	o.flags = f
	if !f.Changed("default") && !f.Changed("config") && !f.Changed("unset-config") && !f.Changed("credential") {
		return fmt.Errorf("nothing to change: give --default, --config, --unset-config or --credential")
	}
	var err error
	o.secret, err = kube.SecretKey(o.credential)
	return err
}

// change is the location's spec with the flags applied: config keys set
// and removed, the others kept; the provider as it is.
func (o *setOptions) change(vsl *salvorv1.VolumeSnapshotLocation) salvorv1.VolumeSnapshotLocationSpec {
	spec := *vsl.Spec.DeepCopy()
	if o.flags.Changed("default") {
		spec.Default = o.isDefault
	}
	spec.Config = kube.MergeConfig(spec.Config, o.config, o.clearConfig)
	if o.secret != nil {
		spec.Credential = o.secret
	}
	return spec
}

func (o *setOptions) run(cmd *cobra.Command, k *kube.Options, name string) error {
	c, err := k.Client()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	vsl, err := kube.Get[salvorv1.VolumeSnapshotLocation](ctx, c, k.Namespace, "volume snapshot location", name)
	if err != nil {
		return err
	}
	spec := o.change(vsl)
	if err := kube.Patch(ctx, c, vsl, func(vsl *salvorv1.VolumeSnapshotLocation) { vsl.Spec = spec }); err != nil {
		return fmt.Errorf("changing volume snapshot location %s: %w", name, err)
	}
	// Others stop being the default only once this one is: a patch that
	// fails changes no location's mark.
	if o.flags.Changed("default") && o.isDefault {
		if err := clearDefault(ctx, c, k.Namespace, vsl.Name); err != nil {
			return err
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Volume snapshot location %q changed.\n", name)
	return nil
}

// clearDefault unsets the default mark of every volume snapshot location
// but keep.
func clearDefault(ctx context.Context, c client.Client, namespace, keep string) error {
	return kube.ClearDefault(ctx, c, namespace, "volume snapshot location", keep, &salvorv1.VolumeSnapshotLocationList{},
		func(v *salvorv1.VolumeSnapshotLocation) *bool { return &v.Spec.Default })
}

// backupsWithSnapshotsIn names the backups in the cluster whose volume
// snapshots were taken through location vsl: those with a
// VolumePluginBackup of it, and those whose spec names it and that took
// snapshots (made before their VolumePluginBackups named a location).
func backupsWithSnapshotsIn(ctx context.Context, c client.Client, namespace, vsl string) ([]string, error) {
	backups := &salvorv1.BackupList{}
	if err := c.List(ctx, backups, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	vpbs := &salvorv1.VolumePluginBackupList{}
	if err := c.List(ctx, vpbs, client.InNamespace(namespace), client.MatchingLabels{salvorv1.SnapshotLocationLabel: salvorv1.LabelValue(vsl)}); err != nil {
		return nil, err
	}
	through := map[string]bool{}
	for _, v := range vpbs.Items {
		through[v.Spec.Backup] = true
	}
	var with []string
	for _, b := range backups.Items {
		if through[b.Name] || (b.Status.VolumeSnapshotsAttempted > 0 && slices.Contains(b.Spec.VolumeSnapshotLocations, vsl)) {
			with = append(with, b.Name)
		}
	}
	return with, nil
}

func newDelete(k *kube.Options) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete volume snapshot locations (never the snapshots taken with them)",
		Long: `Deletes VolumeSnapshotLocation objects; no snapshot is deleted. Deleting a
backup deletes its snapshots through the location they were taken with, so
while backups whose snapshots were taken through this location are in the
cluster, a delete is refused unless --force is given: without the location,
deleting those backups leaves their snapshots behind (create the location
again to delete them). Backups of other locations do not count.`,
		Example: "  salvor snapshot-location delete old\n  salvor snapshot-location delete old --force",
		Args:    cobra.MinimumNArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			ctx := cmd.Context()
			return kube.Each(ctx, c, k.Namespace, "volume snapshot location", args, func(vsl *salvorv1.VolumeSnapshotLocation) error {
				if !force {
					with, err := backupsWithSnapshotsIn(ctx, c, k.Namespace, vsl.Name)
					if err != nil {
						return err
					}
					if len(with) > 0 {
						sort.Strings(with)
						shown := with
						if len(shown) > 3 {
							shown = append(shown[:3:3], fmt.Sprintf("and %d more", len(with)-3))
						}
						return fmt.Errorf("volume snapshot location %s: %d backups have volume snapshots taken through it (%s), and deleting a backup deletes its "+
							"snapshots through the location they were taken with; give --force to delete it anyway", vsl.Name, len(with), strings.Join(shown, ", "))
					}
				}
				if err := c.Delete(ctx, vsl); err != nil {
					return fmt.Errorf("deleting volume snapshot location %s: %w", vsl.Name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Volume snapshot location %q deleted; no snapshot was.\n", vsl.Name)
				return nil
			})
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "delete even though backups with volume snapshots are in the cluster")
	return kube.Deletes(cmd, k, "volume snapshot location", &salvorv1.VolumeSnapshotLocationList{}, "Delete volume snapshot location %s?")
}
