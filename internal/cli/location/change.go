package location

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// setOptions are `backup-location set`'s flags. The location's new spec
// is a function of them and the current one (change), judged before the
// location is read (complete), so a bad flag changes nothing.
type setOptions struct {
	config      map[string]string
	credential  map[string]string
	accessMode  string
	isDefault   bool
	clearConfig []string
	caCertFile  string
	tenants     tenantFlags

	flags  *pflag.FlagSet
	secret *corev1.SecretKeySelector // from --credential
	caCert []byte                    // --cacert's content
}

func newSet(k *kube.Options) *cobra.Command {
	o := &setOptions{}
	cmd := &cobra.Command{
		Use:   "set NAME",
		Short: "Change a backup storage location: its config, credential, access mode, default or tenants",
		Long: `Changes a location in place. --config sets the given keys and keeps the
others (--unset-config removes keys); the bucket, prefix and provider are
fixed: a location is where its backups are, so create another for another
place. The server checks the location again within its check interval.`,
		Example: `  salvor backup-location set s3 --default
  salvor backup-location set s3 --config s3Url=https://minio.example.com --credential s3-credentials=cloud
  salvor backup-location set primary-dr --access-mode ReadWrite
  salvor backup-location set s3 --tenant-selector 'salvor.dev/tenant in (team-a,team-b)' --share-backups`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(cmd.Flags(), os.ReadFile); err != nil {
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
	f.StringToStringVar(&o.credential, "credential", nil, "SECRET=KEY: the Secret key holding the object store's credentials")
	f.StringVar(&o.accessMode, "access-mode", "", "ReadWrite or ReadOnly")
	f.StringVar(&o.caCertFile, "cacert", "", "a PEM file of the CA that signs the object store's certificate (Velero's flag)")
	o.tenants.bind(f, true)
}

// complete checks every flag and reads what they name (--cacert's file,
// with readFile), before anything is read from or written to the cluster.
func (o *setOptions) complete(f *pflag.FlagSet, readFile func(string) ([]byte, error)) error {
	o.flags = f
	if !f.Changed("default") && !f.Changed("config") && !f.Changed("unset-config") && !f.Changed("credential") && !f.Changed("access-mode") && o.caCertFile == "" && !o.tenants.given(f) {
		return fmt.Errorf("nothing to change: give --default, --config, --unset-config, --credential, --access-mode, --cacert, --tenant-selector, --share-backups, --tenant-max-concurrent-jobs, --tenant-max-backups, --tenant-max-bytes or --no-tenants")
	}
	if o.caCertFile != "" {
		var err error
		if o.caCert, err = readFile(o.caCertFile); err != nil {
			return fmt.Errorf("--cacert: %w", err)
		}
	}
	var err error
	if o.secret, err = kube.SecretKey(o.credential); err != nil {
		return err
	}
	mode := salvorv1.BackupStorageLocationAccessMode(o.accessMode)
	if f.Changed("access-mode") && mode != salvorv1.BackupStorageLocationAccessModeReadWrite && mode != salvorv1.BackupStorageLocationAccessModeReadOnly {
		return fmt.Errorf("--access-mode %q: want ReadWrite or ReadOnly", o.accessMode)
	}
	return nil
}

// change is the location's spec with the flags applied: config keys set
// and removed, the others kept; the bucket, prefix and provider as they
// are.
func (o *setOptions) change(bsl *salvorv1.BackupStorageLocation) (salvorv1.BackupStorageLocationSpec, error) {
	spec := *bsl.Spec.DeepCopy()
	f := o.flags
	if o.tenants.given(f) {
		tenants, err := o.tenants.apply(f, bsl.Spec.Tenants)
		if err != nil {
			return spec, fmt.Errorf("backup storage location %s: %w", bsl.Name, err)
		}
		spec.Tenants = tenants
	}
	if f.Changed("default") {
		spec.Default = o.isDefault
	}
	spec.Config = kube.MergeConfig(spec.Config, o.config, o.clearConfig)
	if o.secret != nil {
		spec.Credential = o.secret
	}
	if f.Changed("access-mode") {
		spec.AccessMode = salvorv1.BackupStorageLocationAccessMode(o.accessMode)
	}
	if o.caCert != nil {
		spec.ObjectStorage.CACert = o.caCert
	}
	return spec, nil
}

func (o *setOptions) run(cmd *cobra.Command, k *kube.Options, name string) error {
	c, err := k.Client()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	bsl, err := kube.Get[salvorv1.BackupStorageLocation](ctx, c, k.Namespace, "backup storage location", name)
	if err != nil {
		return err
	}
	spec, err := o.change(bsl)
	if err != nil {
		return err
	}
	if err := kube.Patch(ctx, c, bsl, func(bsl *salvorv1.BackupStorageLocation) { bsl.Spec = spec }); err != nil {
		return fmt.Errorf("changing backup storage location %s: %w", name, err)
	}
	// Others stop being the default only once this one is: a patch that
	// fails changes no location's mark.
	if o.flags.Changed("default") && o.isDefault {
		if err := clearDefault(ctx, c, k.Namespace, bsl.Name); err != nil {
			return err
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Backup storage location %q changed. `salvor backup-location get %s` shows whether the server can reach it.\n", name, name)
	return nil
}

// withFiles are the backups that may have files in their location: not
// those that never started (New, FailedValidation) nor those that failed
// before listing an item.
func withFiles(backups []salvorv1.Backup) []salvorv1.Backup {
	var out []salvorv1.Backup
	for _, b := range backups {
		switch {
		case b.Status.Phase == "", b.Status.Phase == salvorv1.BackupPhaseNew, b.Status.Phase == salvorv1.BackupPhaseFailedValidation:
		case b.Status.Phase == salvorv1.BackupPhaseFailed && b.Status.Progress == nil && b.Status.StartTimestamp == nil:
		default:
			out = append(out, b)
		}
	}
	return out
}

func newDelete(k *kube.Options) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete backup storage locations (never the backups in them)",
		Long: `Deletes the BackupStorageLocation objects. Nothing in the bucket is deleted.
A location that backups in the cluster are stored in (backups that never
ran do not count) is refused unless --force is given, and the other names
are still deleted: those backups could no longer be restored, deleted or
expired through Salvor (their files stay in the bucket), until a location
pointing at the same bucket and prefix is created again and syncs them.`,
		Example: "  salvor backup-location delete old-s3\n  salvor backup-location delete old-s3 --force",
		Args:    cobra.MinimumNArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			ctx := cmd.Context()
			return kube.Each(ctx, c, k.Namespace, "backup storage location", args, func(bsl *salvorv1.BackupStorageLocation) error {
				list := &salvorv1.BackupList{}
				if err := c.List(ctx, list, client.InNamespace(k.Namespace), client.MatchingLabels{salvorv1.LocationLabel: bsl.Name}); err != nil {
					return err
				}
				backups := withFiles(list.Items)
				if n := len(backups); n > 0 && !force {
					names := make([]string, 0, 3)
					for i := 0; i < n && i < 3; i++ {
						names = append(names, backups[i].Name)
					}
					more := ""
					if n > 3 {
						more = fmt.Sprintf(" and %d more", n-3)
					}
					return fmt.Errorf("backup storage location %s holds %d backups (%s%s): without it they cannot be restored, deleted or expired "+
						"through Salvor, though their files stay in the bucket; give --force to delete it anyway", bsl.Name, n, strings.Join(names, ", "), more)
				}
				if err := c.Delete(ctx, bsl); err != nil {
					return fmt.Errorf("deleting backup storage location %s: %w", bsl.Name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Backup storage location %q deleted; nothing in its bucket was.\n", bsl.Name)
				return nil
			})
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "delete a location even though backups in the cluster are stored in it")
	return kube.Deletes(cmd, k, "backup storage location", &salvorv1.BackupStorageLocationList{}, "Delete backup storage location %s?")
}
