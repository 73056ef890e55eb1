package restore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clibackup "github.com/salvor-dev/salvor/internal/cli/backup"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	"github.com/salvor-dev/salvor/internal/cli/veleroflag"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// createOptions are `salvor restore create`'s flags: bound, then turned
// into a Restore with no cluster (restore), then sent (run).
type createOptions struct {
	flags                                *pflag.FlagSet
	format                               output.Format
	schedule                             string
	preserveNodePorts                    bool
	backup                               string
	includeNamespaces, excludeNamespaces []string
	includeResources, excludeResources   []string
	statusInclude, statusExclude         []string
	selector, orSelector                 string
	mappings                             []string
	existing                             string
	restoreVolumes                       string
	annotationHooks                      string
	trustSnapshots                       bool
	includeClusterResources              string
	itemOperationTimeout                 time.Duration
	wait                                 bool
	strict                               bool
	dryRun                               bool
	allowPartiallyFailed                 bool
	modifiers                            string
	resourcePolicies                     string
	labels, annotations                  map[string]string
}

func newCreate(k *kube.Options) *cobra.Command {
	o := &createOptions{}
	cmd := &cobra.Command{
		Use:   "create [NAME] --from-backup BACKUP | --from-schedule SCHEDULE",
		Short: "Restore from a backup",
		Example: `  salvor restore create --from-backup nightly --wait
  salvor restore create --from-schedule nightly --wait
  salvor restore create shop-copy --from-backup nightly --include-namespaces shop --namespace-mappings shop:shop-copy
  salvor restore create --from-backup nightly --existing-resource-policy update
  salvor restore create --from-backup nightly --resource-modifier-configmap premium-storage
  salvor restore create --from-backup nightly --status-include-resources services,certificates.cert-manager.io
  salvor restore create --from-backup nightly --dry-run --wait`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			rs, err := o.restore(k.Namespace, name, time.Now())
			if err != nil {
				return err
			}
			return o.run(cmd, k, rs)
		},
	}
	o.bind(cmd.Flags())
	return cmd
}

// bind registers the flags, Velero's among them, on f.
func (o *createOptions) bind(f *pflag.FlagSet) {
	o.flags = f
	f.StringVar(&o.backup, "from-backup", "", "the backup to restore")
	f.BoolVar(&o.preserveNodePorts, "preserve-nodeports", false, "keep every Service node port the backup holds (default: keep those someone set, let the cluster assign the others)")
	f.StringVar(&o.schedule, "from-schedule", "", "restore the schedule's newest Completed backup (picked by the server when the restore starts)")
	veleroflag.Add(f, veleroFlags)
	f.StringSliceVar(&o.statusInclude, "status-include-resources", nil, `resources whose items get back the status the backup holds, after they are made (Velero's flag; "*" for all; an item's annotation velero.io/restore-status says otherwise)`)
	f.StringSliceVar(&o.statusExclude, "status-exclude-resources", nil, "resources left out of --status-include-resources")
	f.StringVar(&o.resourcePolicies, "resource-policies-configmap", "", "a ConfigMap in the server's namespace holding resource policies (Velero's format): its clusterScopedFilterPolicy and namespacedFilterPolicies choose items per resource and per namespace")
	f.StringVar(&o.modifiers, "resource-modifier-configmap", "", "a ConfigMap in the server's namespace holding resource modifier rules (Velero's format): patches applied to the items they select before they are created")
	f.BoolVar(&o.allowPartiallyFailed, "allow-partially-failed", false, "with --from-schedule: restore its newest Completed or PartiallyFailed backup")
	kube.AddPrintFlag(f, &o.format)
	f.StringSliceVar(&o.includeNamespaces, "include-namespaces", nil, "namespaces to restore, names or patterns such as app-* (default: all in the backup)")
	f.StringSliceVar(&o.excludeNamespaces, "exclude-namespaces", nil, "namespaces to leave out, names or patterns")
	f.StringSliceVar(&o.includeResources, "include-resources", nil, "resources to restore (default: all)")
	f.StringSliceVar(&o.excludeResources, "exclude-resources", nil, "resources to leave out")
	f.StringVar(&o.includeClusterResources, "include-cluster-resources", "", "restore cluster-scoped items: true, false, or unset for \"when all namespaces are restored, or when a restored item needs them\"")
	f.Lookup("include-cluster-resources").NoOptDefVal = "true"
	f.StringVarP(&o.selector, "selector", "l", "", "restore only items whose labels match")
	f.StringVar(&o.orSelector, "or-selector", "", `restore only items whose labels match one of these selectors, e.g. "app=web or tier in (db,cache)" (Velero's flag; not with --selector)`)
	f.StringSliceVar(&o.mappings, "namespace-mappings", nil, "restore namespaces under other names: from:to pairs, comma-separated")
	f.BoolVar(&o.strict, "strict", false, "fail validation when a namespace filter or mapping names a namespace the backup does not hold (default: a warning)")
	f.StringVar(&o.existing, "existing-resource-policy", "", "what to do with objects that already exist: none (leave them, warn if they differ) or update")
	f.StringVar(&o.restoreVolumes, "restore-volumes", "", "recreate volumes from their snapshots: true or false (default: true)")
	f.Lookup("restore-volumes").NoOptDefVal = "true"
	f.BoolVar(&o.trustSnapshots, "trust-backup-snapshots", false, "make volumes from the snapshots (CSI handles included) the backup's files name even when the backup is not authenticated and this cluster holds no record of taking them (Velero's backups, or another cluster's without its signing key); whoever can write to the bucket can name any snapshot there, so only for a bucket no one else can write")
	f.StringVar(&o.annotationHooks, "annotation-hooks", "", "run the hooks restored pods' annotations ask for, for pods no hook of spec.hooks selects: true or false (default: only for authenticated backups — signed with their location's key, as every backup Salvor writes is)")
	f.Lookup("annotation-hooks").NoOptDefVal = "true"
	f.DurationVar(&o.itemOperationTimeout, "item-operation-timeout", 0, "bound on each plugin operation (default: the server's)")
	f.BoolVarP(&o.wait, "wait", "w", false, "wait for the restore to finish, showing its progress")
	f.BoolVar(&o.dryRun, "dry-run", false, "run the whole restore but send every write as a server-side dry run: nothing is written, and describe --details says what each item would do")
	f.StringToStringVar(&o.labels, "labels", nil, "labels to apply to the restore, KEY=VALUE,...")
	f.StringToStringVar(&o.annotations, "annotations", nil, "annotations to apply to the restore, KEY=VALUE,...")
}

// restore is the Restore the flags ask for, in namespace, named name or
// after its backup or schedule and now: every check that needs no cluster
// is made here, before anything is read or sent.
func (o *createOptions) restore(namespace, name string, now time.Time) (*salvorv1.Restore, error) {
	switch {
	case o.backup == "" && o.schedule == "":
		return nil, fmt.Errorf("say what to restore: --from-backup BACKUP (salvor backup get lists them) or --from-schedule SCHEDULE (its newest Completed backup)")
	case o.backup != "" && o.schedule != "":
		return nil, fmt.Errorf("give --from-backup (the backup to restore) or --from-schedule (restore its newest Completed backup), not both")
	case o.allowPartiallyFailed && o.schedule == "":
		return nil, fmt.Errorf("--allow-partially-failed is for --from-schedule: a backup given with --from-backup is restored whether Completed or PartiallyFailed")
	case len(o.statusExclude) > 0 && len(o.statusInclude) == 0:
		return nil, fmt.Errorf("--status-exclude-resources narrows --status-include-resources, which is not given: name the resources whose status to restore (\"*\" for all)")
	}
	var mapping map[string]string
	for _, m := range o.mappings {
		from, to, ok := strings.Cut(m, ":")
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("--namespace-mappings %q: want from:to, e.g. shop:shop-copy", m)
		}
		if mapping == nil {
			mapping = map[string]string{}
		}
		mapping[from] = to
	}
	if name == "" {
		name = salvorv1.SuffixedName(o.backup+o.schedule, "-"+now.UTC().Format("20060102150405"), 253)
	}
	rs := &salvorv1.Restore{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: o.labels, Annotations: o.annotations},
		Spec: salvorv1.RestoreSpec{
			BackupName:             o.backup,
			ScheduleName:           o.schedule,
			IncludedNamespaces:     o.includeNamespaces,
			ExcludedNamespaces:     o.excludeNamespaces,
			IncludedResources:      o.includeResources,
			ExcludedResources:      o.excludeResources,
			NamespaceMapping:       mapping,
			ExistingResourcePolicy: salvorv1.ExistingResourcePolicy(o.existing),
			ItemOperationTimeout:   metav1.Duration{Duration: o.itemOperationTimeout},
			Strict:                 o.strict,
			DryRun:                 o.dryRun,
			TrustBackupSnapshots:   o.trustSnapshots,
		},
	}
	var err error
	if rs.Spec.LabelSelector, rs.Spec.OrLabelSelectors, err = veleroflag.Selectors(o.selector, o.orSelector); err != nil {
		return nil, err
	}
	if rs.Spec.IncludeClusterResources, err = clibackup.OptionalBool("include-cluster-resources", o.includeClusterResources); err != nil {
		return nil, err
	}
	if rs.Spec.RestorePVs, err = clibackup.OptionalBool("restore-volumes", o.restoreVolumes); err != nil {
		return nil, err
	}
	if rs.Spec.AnnotationHooks, err = clibackup.OptionalBool("annotation-hooks", o.annotationHooks); err != nil {
		return nil, err
	}
	if o.preserveNodePorts {
		rs.Spec.PreserveNodePorts = &o.preserveNodePorts
	}
	if o.modifiers != "" {
		rs.Spec.ResourceModifier = &corev1.TypedLocalObjectReference{Kind: "configmap", Name: o.modifiers}
	}
	if o.resourcePolicies != "" {
		rs.Spec.ResourcePolicy = &corev1.TypedLocalObjectReference{Kind: "configmap", Name: o.resourcePolicies}
	}
	if len(o.statusInclude) > 0 {
		rs.Spec.RestoreStatus = &salvorv1.RestoreStatusSpec{IncludedResources: o.statusInclude, ExcludedResources: o.statusExclude}
	}
	return rs, nil
}

// run sends rs (or prints it, with --output) and, with --wait, follows it
// to its end.
func (o *createOptions) run(cmd *cobra.Command, k *kube.Options, rs *salvorv1.Restore) error {
	ctx, out := cmd.Context(), cmd.OutOrStdout()
	c, err := k.Client()
	if err != nil {
		return err
	}
	if o.allowPartiallyFailed {
		// As Velero's CLI does: pick here, and name the backup; with none
		// to pick, the server judges the schedule as usual.
		if rs.Spec.BackupName, err = newestOfSchedule(ctx, c, rs.Namespace, o.schedule); err != nil {
			return err
		}
	}
	velero, err := veleroflag.Fields(o.flags, veleroFlags)
	if err != nil {
		return err
	}
	if printed, err := kube.Print(out, c, o.format, rs, velero, "spec"); printed || err != nil {
		return err
	}
	if err := kube.CreateWith(ctx, c, rs, velero, "spec"); err != nil {
		return fmt.Errorf("creating restore %s: %w", rs.Name, err)
	}
	fmt.Fprintf(out, "Restore %q submitted.\n", rs.Name)
	if !o.wait {
		fmt.Fprintf(out, "Run `salvor restore describe %s` to see how it goes.\n", rs.Name)
		return nil
	}
	final, err := wait(ctx, c, rs, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Restore %s: %s. Run `salvor restore describe %s` for details.\n", final.Name, final.Status.Phase, final.Name)
	if final.Status.Phase != salvorv1.RestorePhaseCompleted {
		return fmt.Errorf("restore %s ended %s", final.Name, final.Status.Phase)
	}
	return nil
}

// newestOfSchedule names a schedule's newest Completed or PartiallyFailed
// backup, by Salvor's schedule label or Velero's; "" if it has none.
func newestOfSchedule(ctx context.Context, c client.Client, namespace, schedule string) (string, error) {
	var backups []salvorv1.Backup
	for _, label := range []string{salvorv1.ScheduleNameLabel, salvorv1.VeleroScheduleNameLabel} {
		list := &salvorv1.BackupList{}
		if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{label: schedule}); err != nil {
			return "", fmt.Errorf("listing schedule %s's backups: %w", schedule, err)
		}
		backups = append(backups, list.Items...)
	}
	if b := salvorv1.NewestBackup(backups, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed); b != nil {
		return b.Name, nil
	}
	return "", nil
}
