package location

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/get"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	"github.com/salvor-dev/salvor/internal/kopiarepo"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// NewCommand returns `salvor backup-location`.
func NewCommand(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "backup-location",
		Aliases: []string{"backup-locations", "bsl"},
		Short:   "Work with backup storage locations",
	}
	cmd.AddCommand(newCreate(k), newGet(k), newSet(k), newDelete(k), newRotateKey(k))
	return cmd
}

// createOptions are `salvor backup-location create`'s flags: bound,
// turned into a BackupStorageLocation with no cluster (location), then sent
// (run).
type createOptions struct {
	flags                    *pflag.FlagSet
	provider, bucket, prefix string
	config                   map[string]string
	isDefault                bool
	accessMode               string
	credential               map[string]string
	encryptionKey            string
	immutableFor             time.Duration
	immutableMode            string
	caCertFile               string
	syncPeriod, validation   time.Duration
	labels                   map[string]string
	tenants                  tenantFlags
	format                   output.Format
}

func newCreate(k *kube.Options) *cobra.Command {
	o := &createOptions{}
	cmd := &cobra.Command{
		Use:   "create NAME --provider P --bucket B",
		Short: "Create a backup storage location",
		Long: `Creates a BackupStorageLocation: where backups are written (a bucket, and a
prefix in it). Locations may share a bucket beside each other (prefixes
cluster-a and cluster-b) or at the same path (a ReadOnly one beside a
ReadWrite one), but not one inside another (one at the root, one under a
prefix): each would find the other's directory among its own and be
Unavailable, so such a create is refused, naming the other location.`,
		Example: `  salvor backup-location create default --provider salvor.dev/filesystem --bucket backups --config root=/var/lib/salvor --default
  salvor backup-location create s3 --provider salvor.dev/s3 --bucket backups --prefix cluster-a \
      --config region=us-east-1,s3Url=http://minio:9000,s3ForcePathStyle=true,credentialsFile=/credentials/cloud
  salvor backup-location create s3-keyed --provider salvor.dev/s3 --bucket backups --prefix cluster-b --credential s3-credentials=cloud \
      --config region=us-east-1,s3Url=http://minio:9000,s3ForcePathStyle=true
  salvor backup-location create vault --provider salvor.dev/s3 --bucket backups --prefix sealed --encryption-key-secret backup-keys \
      --config region=us-east-1,s3Url=http://minio:9000,s3ForcePathStyle=true,credentialsFile=/credentials/cloud
  salvor backup-location create teams --provider salvor.dev/s3 --bucket backups --prefix teams --tenant-selector salvor.dev/tenant \
      --config region=us-east-1,s3Url=http://minio:9000,s3ForcePathStyle=true,credentialsFile=/credentials/cloud
  salvor backup-location create primary-dr --provider salvor.dev/s3 --bucket backups --prefix cluster-a --access-mode ReadOnly \
      --config region=us-east-1,s3Url=http://minio:9000,s3ForcePathStyle=true,credentialsFile=/credentials/cloud`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bsl, err := o.location(k.Namespace, args[0])
			if err != nil {
				return err
			}
			return o.run(cmd, k, bsl)
		},
	}
	o.bind(cmd.Flags())
	return cmd
}

// bind registers the flags, Velero's among them, on f.
func (o *createOptions) bind(f *pflag.FlagSet) {
	o.flags = f
	f.StringVar(&o.provider, "provider", "", "object store plugin: salvor.dev/filesystem, salvor.dev/s3, or a plugin's name")
	f.StringVar(&o.bucket, "bucket", "", "bucket holding the backups")
	f.StringVar(&o.prefix, "prefix", "", "path inside the bucket")
	f.StringToStringVar(&o.config, "config", nil, "plugin config as key=value pairs, comma-separated")
	f.StringToStringVar(&o.credential, "credential", nil, "SECRET=KEY: the key of a Secret in Salvor's namespace holding the object store's credentials (Velero's flag); the server passes it to the plugin as credentialsFile")
	f.BoolVar(&o.isDefault, "default", false, "use this location for backups that name none (unsets any other default)")
	f.StringVar(&o.accessMode, "access-mode", string(salvorv1.BackupStorageLocationAccessModeReadWrite),
		"ReadWrite, or ReadOnly: never written to or deleted from (backups to it fail; deleting one of its backups removes only the Backup object)")
	f.DurationVar(&o.immutableFor, "immutable-for", 0, "write every object with an S3 Object Lock retention of this long (at least the backups' TTL; backups there with no ttl are kept this long when the server's default is longer); the bucket must have Object Lock enabled")
	f.StringVar(&o.immutableMode, "immutable-mode", "", "with --immutable-for: GOVERNANCE (default) or COMPLIANCE")
	f.StringVar(&o.caCertFile, "cacert", "", "a PEM file of the CA that signs the object store's certificate (Velero's flag; spec.objectStorage.caCert)")
	f.DurationVar(&o.syncPeriod, "backup-sync-period", 0, "how often the location's backups are synced into the cluster; 0 never (Velero's flag; default: at every check)")
	f.DurationVar(&o.validation, "validation-frequency", 0, "how often the location is checked; 0 only when it changes (Velero's flag; default: the server's --location-check-interval)")
	f.StringToStringVar(&o.labels, "labels", nil, "labels to apply, KEY=VALUE,... (Velero's flag)")
	o.tenants.bind(f, false)
	kube.AddPrintFlag(f, &o.format)
	f.StringVar(&o.encryptionKey, "encryption-key-secret", "", "encrypt every object written to the location with the keys in this Secret of Salvor's namespace: NAME or NAME/KEY (key default \"keys\"); the server creates it with a new key if it does not exist")
}

// location is the BackupStorageLocation the flags describe, or what to fix
// in them.
func (o *createOptions) location(namespace, name string) (*salvorv1.BackupStorageLocation, error) {
	if o.provider == "" || o.bucket == "" {
		return nil, fmt.Errorf("--provider and --bucket are required")
	}
	mode := salvorv1.BackupStorageLocationAccessMode(o.accessMode)
	if mode != salvorv1.BackupStorageLocationAccessModeReadWrite && mode != salvorv1.BackupStorageLocationAccessModeReadOnly {
		return nil, fmt.Errorf("--access-mode %q: want ReadWrite or ReadOnly", o.accessMode)
	}
	credential, err := kube.SecretKey(o.credential)
	if err != nil {
		return nil, err
	}
	bsl := &salvorv1.BackupStorageLocation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: o.labels},
		Spec: salvorv1.BackupStorageLocationSpec{
			Provider:      o.provider,
			Config:        o.config,
			ObjectStorage: salvorv1.ObjectStorageLocation{Bucket: o.bucket, Prefix: o.prefix},
			Default:       o.isDefault,
			AccessMode:    mode,
			Credential:    credential,
		},
	}
	if o.immutableFor < 0 || (o.immutableFor == 0 && o.immutableMode != "") {
		return nil, fmt.Errorf("--immutable-for %s: give how long each object is retained (for example 720h); --immutable-mode needs it", o.immutableFor)
	}
	if o.immutableFor > 0 {
		switch o.immutableMode {
		case "", "GOVERNANCE", "COMPLIANCE":
		default:
			return nil, fmt.Errorf("--immutable-mode %q: want GOVERNANCE or COMPLIANCE", o.immutableMode)
		}
		bsl.Spec.Immutability = &salvorv1.LocationImmutability{RetainFor: metav1.Duration{Duration: o.immutableFor}, Mode: o.immutableMode}
	}
	if o.encryptionKey != "" {
		sel, err := keySelector(o.encryptionKey)
		if err != nil {
			return nil, err
		}
		bsl.Spec.Encryption = &salvorv1.LocationEncryption{KeySecret: sel}
	}
	if bsl.Spec.Tenants, err = o.tenants.apply(o.flags, nil); err != nil {
		return nil, err
	}
	if o.caCertFile != "" {
		if bsl.Spec.ObjectStorage.CACert, err = os.ReadFile(o.caCertFile); err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
	}
	for _, d := range []struct {
		flag  string
		value time.Duration
		field **metav1.Duration
	}{{"backup-sync-period", o.syncPeriod, &bsl.Spec.BackupSyncPeriod}, {"validation-frequency", o.validation, &bsl.Spec.ValidationFrequency}} {
		if d.value < 0 {
			return nil, fmt.Errorf("--%s %s: must not be negative", d.flag, d.value)
		}
		if o.flags.Changed(d.flag) {
			*d.field = &metav1.Duration{Duration: d.value}
		}
	}
	return bsl, nil
}

// run prints bsl (-o) or checks that it shares no bucket path with another
// location and creates it, making it the only default when it is one.
func (o *createOptions) run(cmd *cobra.Command, k *kube.Options, bsl *salvorv1.BackupStorageLocation) error {
	c, err := k.Client()
	if err != nil {
		return err
	}
	ctx, out := cmd.Context(), cmd.OutOrStdout()
	if printed, err := kube.Print(out, c, o.format, bsl, nil); printed || err != nil {
		return err
	}
	others := &salvorv1.BackupStorageLocationList{}
	if err := c.List(ctx, others, client.InNamespace(bsl.Namespace)); err != nil {
		return fmt.Errorf("listing the backup storage locations, to check %s shares no bucket path with one: %w", bsl.Name, err)
	}
	if msg := nestedLocation(bsl, others.Items); msg != "" {
		return fmt.Errorf("backup storage location %s: %s", bsl.Name, msg)
	}
	if err := c.Create(ctx, bsl); err != nil {
		return fmt.Errorf("creating backup storage location %s: %w", bsl.Name, err)
	}
	// Only once the new location exists does any other stop being the
	// default: a create that fails changes nothing.
	if o.isDefault {
		if err := clearDefault(ctx, c, bsl.Namespace, bsl.Name); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "Backup storage location %q created. `salvor backup-location get %s` shows whether the server can reach it.\n", bsl.Name, bsl.Name)
	if o.immutableFor > 0 {
		fmt.Fprintf(out, "Its objects are locked for %s: a backup stored there with no ttl is kept %s (not the server's default ttl, if longer), and one that gives a longer ttl is refused.\n", o.immutableFor, o.immutableFor)
		if o.immutableFor < kopiarepo.MinRetention {
			fmt.Fprintf(out, "Volume data moved there (data mover, file-system backup) is locked for %s, the shortest kopia locks for.\n", kopiarepo.MinRetention)
		}
	}
	if e := bsl.Spec.Encryption; e != nil {
		fmt.Fprintf(out, "Its objects are encrypted with the keys in Secret %s/%s, key %s; if it does not exist, the server creates it with a new key: keep a copy outside the cluster.\n",
			bsl.Namespace, e.KeySecret.Name, e.KeySecret.Key)
	}
	return nil
}

// clearDefault unsets the default mark of every backup storage location
// but keep.
// nestedLocation says how bsl would break, or be broken by, another
// location on the same store and bucket whose path holds its own or lies
// in it ("" when none does): each finds the other's directory among its
// own top-level ones and is Unavailable (or, under backups/, takes it for a
// backup). Two locations at the very same path are left alone (a ReadOnly
// one beside a ReadWrite one is how a bucket is shared).
func nestedLocation(bsl *salvorv1.BackupStorageLocation, others []salvorv1.BackupStorageLocation) string {
	clean := func(p string) string { return strings.Trim(p, "/") }
	mine := clean(bsl.Spec.ObjectStorage.Prefix)
	within := func(inner, outer string) bool { return outer == "" || strings.HasPrefix(inner+"/", outer+"/") }
	where := func(p string) string {
		if p == "" {
			return "the root of bucket " + bsl.Spec.ObjectStorage.Bucket
		}
		return fmt.Sprintf("prefix %q of bucket %s", p, bsl.Spec.ObjectStorage.Bucket)
	}
	for _, o := range others {
		if o.Name == bsl.Name || o.Spec.Provider != bsl.Spec.Provider || o.Spec.ObjectStorage.Bucket != bsl.Spec.ObjectStorage.Bucket ||
			o.Spec.Config["s3Url"] != bsl.Spec.Config["s3Url"] {
			continue
		}
		theirs := clean(o.Spec.ObjectStorage.Prefix)
		switch {
		case theirs == mine:
		case within(mine, theirs):
			return fmt.Sprintf("location %s uses %s, and %s lies inside it: %s would find an unknown directory among its own and become Unavailable; give this location another bucket, or a prefix beside %s's, not inside it",
				o.Name, where(theirs), where(mine), o.Name, o.Name)
		case within(theirs, mine):
			return fmt.Sprintf("location %s uses %s, which lies inside %s: this location would find %s's directory among its own and be Unavailable; give this location another bucket, or a prefix beside %s's",
				o.Name, where(theirs), where(mine), o.Name, o.Name)
		}
	}
	return ""
}

func clearDefault(ctx context.Context, c client.Client, ns, keep string) error {
	return kube.ClearDefault(ctx, c, ns, "backup storage location", keep, &salvorv1.BackupStorageLocationList{},
		func(l *salvorv1.BackupStorageLocation) *bool { return &l.Spec.Default })
}

func newGet(k *kube.Options) *cobra.Command {
	return get.Command[salvorv1.BackupStorageLocation](k, "backupstoragelocation", "Show backup storage locations and whether they are available",
		"  salvor backup-location get\n  salvor backup-location get default -o yaml\n  salvor backup-location get -o wide\n  salvor backup-location get --default",
		&salvorv1.BackupStorageLocationList{}, get.Table[salvorv1.BackupStorageLocation]{
			Header: []string{"NAME", "PROVIDER", "BUCKET/PREFIX", "PHASE", "DEFAULT", "ACCESS MODE", "MESSAGE"},
			Row: func(bsl *salvorv1.BackupStorageLocation) []string {
				def := ""
				if bsl.Spec.Default {
					def = "true"
				}
				mode := string(bsl.Spec.AccessMode)
				if mode == "" {
					mode = string(salvorv1.BackupStorageLocationAccessModeReadWrite)
				}
				return []string{bsl.Name, bsl.Spec.Provider, bsl.Spec.ObjectStorage.Bucket + "/" + bsl.Spec.ObjectStorage.Prefix,
					output.Or(string(bsl.Status.Phase), "Unknown"), def, mode, bsl.Status.Message}
			},
			WideHeader: []string{"LAST VALIDATED", "LAST SYNCED", "CREDENTIAL", "TENANTS", "CONFIG"},
			WideRow: func(bsl *salvorv1.BackupStorageLocation) []string {
				credential := "-"
				if c := bsl.Spec.Credential; c != nil {
					credential = c.Name + "/" + c.Key
				}
				return []string{output.Time(bsl.Status.LastValidationTime), output.Time(bsl.Status.LastSyncedTime), credential, tenantsText(bsl.Spec.Tenants), configText(bsl.Spec.Config)}
			},
			Filters: []get.Filter[salvorv1.BackupStorageLocation]{{Flag: "default", Usage: "only the default location (Velero's flag)",
				Keep: func(bsl *salvorv1.BackupStorageLocation) bool { return bsl.Spec.Default }}},
		})
}

// configText is a plugin config as sorted key=value pairs.
func configText(config map[string]string) string {
	if len(config) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + config[k]
	}
	return strings.Join(parts, ",")
}
