package backup

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	"github.com/salvor-dev/salvor/internal/cli/veleroflag"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// SpecFlags are the flags that make a BackupSpec: `backup create` and
// `schedule create` take the same ones.
type SpecFlags struct {
	includeNamespaces, excludeNamespaces []string
	includeResources, excludeResources   []string
	includeClusterResources              string
	// Velero's per-scope resource lists: namespace-scoped included and
	// excluded, cluster-scoped included and excluded.
	scoped                             [4][]string
	selector, orSelector               string
	storageLocation                    string
	ttl, itemOperationTimeout, timeout time.Duration
	snapshotVolumes                    string
	snapshotMoveData                   string
	dataMover                          string
	volumeSnapshotLocations            []string
	strict                             bool
	resourcePolicies                   string
	orderedResources                   string
	// Labels and Annotations go on the object made (a schedule passes its
	// own to its backups, as Velero's do).
	Labels, Annotations map[string]string
	flags               *pflag.FlagSet
}

type createOptions struct {
	SpecFlags
	fromSchedule string
	wait         bool
	format       output.Format
}

// OptionalBool reads a flag whose unset value means "the default":
// "" is nil, else true or false.
func OptionalBool(flag, v string) (*bool, error) {
	if v == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return nil, fmt.Errorf("--%s=%q: want true or false", flag, v)
	}
	return &b, nil
}

// backupName is the backup's name: the one given, or, for a run of a
// schedule given none, SCHEDULE-<UTC timestamp> as Velero names it.
func backupName(args []string, fromSchedule string, now time.Time) (string, error) {
	switch {
	case len(args) == 1:
		return args[0], nil
	case fromSchedule != "":
		return fromSchedule + "-" + now.UTC().Format("20060102150405"), nil
	}
	return "", fmt.Errorf("name the backup (salvor backup create NAME), or give --from-schedule SCHEDULE, which names it SCHEDULE-<timestamp>")
}

func newCreate(k *kube.Options) *cobra.Command {
	o := &createOptions{}
	cmd := &cobra.Command{
		Use:   "create [NAME]",
		Short: "Create a backup",
		Example: `  salvor backup create nightly --include-namespaces app,db --ttl 72h --wait
  salvor backup create web --include-resources deployments.apps,configmaps --selector app=web
  salvor backup create everything --storage-location s3 --item-operation-timeout 30m
  salvor backup create apps --include-namespaces shop --resource-policies-configmap skip-scratch
  salvor backup create --from-schedule nightly   # named nightly-<timestamp>`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.MaximumNArgs(1)(cmd, args); err != nil {
				return err
			}
			_, err := backupName(args, o.fromSchedule, time.Now())
			return err
		},
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			name, err := backupName(args, o.fromSchedule, time.Now())
			if err != nil {
				return err
			}
			args = []string{name}
			b, err := o.backup(cmd.Context(), c, args[0], k.Namespace)
			if err != nil {
				return err
			}
			velero, err := o.VeleroFields()
			if err != nil {
				return err
			}
			if printed, err := kube.Print(cmd.OutOrStdout(), c, o.format, b, velero, "spec"); printed || err != nil {
				return err
			}
			if err := kube.CreateWith(cmd.Context(), c, b, velero, "spec"); err != nil {
				return fmt.Errorf("creating backup %s: %w", args[0], err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Backup %q submitted.\n", args[0])
			if !o.wait {
				fmt.Fprintf(out, "Run `salvor backup describe %s` to see how it goes.\n", args[0])
				return nil
			}
			final, err := Wait(cmd.Context(), c, b, out)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Backup %s: %s. Run `salvor backup describe %s` for details.\n", final.Name, final.Status.Phase, final.Name)
			if final.Status.Phase != salvorv1.BackupPhaseCompleted {
				return fmt.Errorf("backup %s ended %s", final.Name, final.Status.Phase)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	o.AddFlags(f)
	f.StringVar(&o.fromSchedule, "from-schedule", "", "run this schedule's template now (no other backup options may be given)")
	f.BoolVarP(&o.wait, "wait", "w", false, "wait for the backup to finish, showing its progress")
	kube.AddPrintFlag(f, &o.format)
	return cmd
}

// AddFlags binds the spec flags.
func (o *SpecFlags) AddFlags(f *pflag.FlagSet) {
	o.flags = f
	f.StringSliceVar(&o.includeNamespaces, "include-namespaces", nil, "namespaces to back up, names or patterns such as app-* (default: all)")
	f.StringSliceVar(&o.excludeNamespaces, "exclude-namespaces", nil, "namespaces to leave out, names or patterns")
	f.StringSliceVar(&o.includeResources, "include-resources", nil, "resources to back up, e.g. deployments.apps,configmaps (default: all)")
	f.StringSliceVar(&o.excludeResources, "exclude-resources", nil, "resources to leave out")
	f.StringVar(&o.includeClusterResources, "include-cluster-resources", "", "back up cluster-scoped resources: true, false, or unset for \"when all namespaces are backed up\"")
	f.Lookup("include-cluster-resources").NoOptDefVal = "true"
	f.StringSliceVar(&o.scoped[0], "include-namespace-scoped-resources", nil, "namespaced resources to back up (default: all); with the other scoped lists, in place of --include-resources, --exclude-resources and --include-cluster-resources (Velero's flag)")
	f.StringSliceVar(&o.scoped[1], "exclude-namespace-scoped-resources", nil, "namespaced resources to leave out (Velero's flag)")
	f.StringSliceVar(&o.scoped[2], "include-cluster-scoped-resources", nil, `cluster-scoped resources to back up, "*" for all (default: those the namespaced items need, or all in a backup of everything) (Velero's flag)`)
	f.StringSliceVar(&o.scoped[3], "exclude-cluster-scoped-resources", nil, "cluster-scoped resources to leave out, even those the namespaced items need (Velero's flag)")
	f.StringVarP(&o.selector, "selector", "l", "", "back up only items whose labels match this selector")
	f.StringVar(&o.orSelector, "or-selector", "", `back up only items whose labels match one of these selectors, e.g. "app=web or tier in (db,cache)" (Velero's flag; not with --selector)`)
	f.StringVar(&o.storageLocation, "storage-location", "", "backup storage location (default: the one marked default)")
	f.DurationVar(&o.ttl, "ttl", 0, "how long to keep the backup (default: the server's, 720h)")
	f.DurationVar(&o.itemOperationTimeout, "item-operation-timeout", 0, "bound on each plugin operation (default: the server's, 4h)")
	f.DurationVar(&o.timeout, "timeout", 0, "bound on the whole backup (default: none)")
	f.StringVar(&o.snapshotVolumes, "snapshot-volumes", "", "snapshot persistent volumes: true or false (default: true)")
	f.Lookup("snapshot-volumes").NoOptDefVal = "true"
	f.StringVar(&o.snapshotMoveData, "snapshot-move-data", "", "move the data of the backup's CSI snapshots into the backup storage location (kopia, by mover pods), so volumes are restored from the bucket alone: true or false (default: false)")
	f.Lookup("snapshot-move-data").NoOptDefVal = "true"
	f.StringVar(&o.dataMover, "data-mover", "", `the data mover for --snapshot-move-data: empty or "salvor" (Velero's "velero" means the same)`)
	f.StringSliceVar(&o.volumeSnapshotLocations, "volume-snapshot-locations", nil, "the volume snapshot location to snapshot volumes through (default: the one marked default, or the only one)")
	f.StringVar(&o.resourcePolicies, "resource-policies-configmap", "", "a ConfigMap in the server's namespace holding resource policies (Velero's format): volume policies that skip, snapshot or fs-backup volumes, resource lists merged under the backup's, filter policies choosing items per resource and per namespace")
	f.StringVar(&o.orderedResources, "ordered-resources", "", `back up these items of a resource one after another, in this order, each with what it brings along (Velero's flag): "pods=ns/db-0,ns/db-1;persistentvolumeclaims=ns/data-db-0"; a name alone for a cluster-scoped resource`)
	f.BoolVar(&o.strict, "strict", false, "fail validation when a namespace filter names a namespace the cluster does not have (default: a warning)")
	f.StringToStringVar(&o.Labels, "labels", nil, "labels to apply, KEY=VALUE,...")
	f.StringToStringVar(&o.Annotations, "annotations", nil, "annotations to apply, KEY=VALUE,...")
	veleroflag.Add(f, veleroFlags)
}

// specFlagNames are the flags AddFlags binds.
var specFlagNames = []string{"include-namespaces", "exclude-namespaces", "include-resources", "exclude-resources",
	"include-cluster-resources", "include-namespace-scoped-resources", "exclude-namespace-scoped-resources",
	"include-cluster-scoped-resources", "exclude-cluster-scoped-resources", "selector", "or-selector", "storage-location", "ttl", "item-operation-timeout", "timeout", "snapshot-volumes", "snapshot-move-data", "data-mover",
	"volume-snapshot-locations", "resource-policies-configmap", "ordered-resources", "strict"}

// Changed names the spec flags given on the command line.
func (o *SpecFlags) Changed() []string {
	var out []string
	for _, n := range specFlagNames {
		if o.flags != nil && o.flags.Changed(n) {
			out = append(out, "--"+n)
		}
	}
	if o.flags != nil {
		out = append(out, veleroflag.Given(o.flags, veleroFlags)...)
	}
	return out
}

// Spec is the BackupSpec the flags say.
func (o *SpecFlags) Spec() (salvorv1.BackupSpec, error) {
	spec := salvorv1.BackupSpec{
		IncludedNamespaces:   o.includeNamespaces,
		ExcludedNamespaces:   o.excludeNamespaces,
		IncludedResources:    o.includeResources,
		ExcludedResources:    o.excludeResources,
		StorageLocation:      o.storageLocation,
		TTL:                  metav1.Duration{Duration: o.ttl},
		ItemOperationTimeout: metav1.Duration{Duration: o.itemOperationTimeout},
		Timeout:              metav1.Duration{Duration: o.timeout},
		Strict:               o.strict,

		IncludedNamespaceScopedResources: o.scoped[0], ExcludedNamespaceScopedResources: o.scoped[1],
		IncludedClusterScopedResources: o.scoped[2], ExcludedClusterScopedResources: o.scoped[3],

		VolumeSnapshotLocations: o.volumeSnapshotLocations,
	}
	if o.resourcePolicies != "" {
		spec.ResourcePolicy = &corev1.TypedLocalObjectReference{Kind: "configmap", Name: o.resourcePolicies}
	}
	var err error
	if spec.OrderedResources, err = parseOrdered(o.orderedResources); err != nil {
		return spec, err
	}
	if spec.IncludeClusterResources, err = OptionalBool("include-cluster-resources", o.includeClusterResources); err != nil {
		return spec, err
	}
	if spec.SnapshotVolumes, err = OptionalBool("snapshot-volumes", o.snapshotVolumes); err != nil {
		return spec, err
	}
	if spec.SnapshotMoveData, err = OptionalBool("snapshot-move-data", o.snapshotMoveData); err != nil {
		return spec, err
	}
	spec.DataMover = o.dataMover
	spec.LabelSelector, spec.OrLabelSelectors, err = veleroflag.Selectors(o.selector, o.orSelector)
	return spec, err
}

// parseOrdered reads --ordered-resources as Velero writes it: resources
// separated by ";", each RESOURCE=ITEM,ITEM,...
func parseOrdered(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, entry := range strings.Split(s, ";") {
		res, items, ok := strings.Cut(entry, "=")
		res, items = strings.TrimSpace(res), strings.TrimSpace(items)
		if !ok || res == "" || items == "" {
			return nil, fmt.Errorf("--ordered-resources %q: want RESOURCE=NAMESPACE/NAME,NAMESPACE/NAME;RESOURCE=..., e.g. pods=db/db-0,db/db-1", entry)
		}
		if _, twice := out[res]; twice {
			return nil, fmt.Errorf("--ordered-resources names %s twice: give its items in one list", res)
		}
		out[res] = items
	}
	return out, nil
}

func (o *createOptions) backup(ctx context.Context, c client.Client, name, namespace string) (*salvorv1.Backup, error) {
	b := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: o.Labels, Annotations: o.Annotations}}
	if o.fromSchedule == "" {
		spec, err := o.Spec()
		b.Spec = spec
		return b, err
	}
	if given := o.Changed(); len(given) > 0 {
		return nil, fmt.Errorf("--from-schedule runs the schedule's template as it is: leave out %s", strings.Join(given, ", "))
	}
	// Read whole, for the template's labels (spec.template.metadata.labels,
	// a Velero field the typed Schedule has not).
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(salvorv1.GroupVersion.WithKind("Schedule"))
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: o.fromSchedule}, u); err != nil {
		return nil, fmt.Errorf("schedule %s: %w", o.fromSchedule, err)
	}
	s := &salvorv1.Schedule{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
		return nil, fmt.Errorf("schedule %s: %w", o.fromSchedule, err)
	}
	b.Spec = *s.Spec.Template.DeepCopy()
	// Labelled as the schedule's backups are (so it counts in the
	// schedule's retention); the labels and annotations given here go on top.
	templateLabels, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
	labels, annotations := salvorv1.ScheduledBackupMeta(s, templateLabels)
	for k, v := range o.Labels {
		labels[k] = v
	}
	for k, v := range o.Annotations {
		annotations[k] = v
	}
	labels[salvorv1.ScheduleNameLabel], labels[salvorv1.VeleroScheduleNameLabel] = s.Name, s.Name
	b.Labels, b.Annotations = labels, annotations
	return b, nil
}

func finished(p salvorv1.BackupPhase) bool {
	switch p {
	case salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed,
		salvorv1.BackupPhaseFailedValidation:
		return true
	}
	return false
}

// Wait polls the backup until it finishes, drawing progress bars — items,
// then one per running plugin operation — on a terminal, and printing a
// line per change otherwise.
func Wait(ctx context.Context, c client.Client, b *salvorv1.Backup, out io.Writer) (*salvorv1.Backup, error) {
	var bars *output.Bars
	if width, ok := output.TerminalWidth(out); ok {
		bars = output.NewBars(out, b.Name, "items", width)
		defer bars.Stop()
	}
	last := map[string]string{}
	pickup := &output.Pickup{Kind: "backup", Name: b.Name, Namespace: b.Namespace}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	changed, stop := kube.Changes(ctx, c, &salvorv1.BackupList{}, client.ObjectKeyFromObject(b))
	defer stop()
	for {
		cur := &salvorv1.Backup{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), cur); err != nil {
			return nil, fmt.Errorf("watching backup %s: %w", b.Name, err)
		}
		lines := progressLines(cur)
		if bars != nil {
			bars.Update(barsOf(cur))
		} else {
			for _, l := range lines {
				if last[l.key] != l.text {
					fmt.Fprintln(out, l.text)
					last[l.key] = l.text
				}
			}
		}
		if finished(cur.Status.Phase) {
			return cur, nil
		}
		isNew := cur.Status.Phase == "" || cur.Status.Phase == salvorv1.BackupPhaseNew
		pickup.Check(out, isNew)
		select {
		case <-ctx.Done():
			return nil, pickup.Stopped(isNew, ctx.Err())
		case <-changed:
		case <-tick.C:
		}
	}
}

type progressLine struct{ key, text string }

// progressLines describes a backup's progress: its items, and each running
// operation, a line each.
func progressLines(b *salvorv1.Backup) []progressLine {
	done, total := 0, 0
	if p := b.Status.Progress; p != nil {
		done, total = p.ItemsBackedUp, p.TotalItems
	}
	out := []progressLine{{"", fmt.Sprintf("%s: %d of %d items backed up", phase(*b), done, total)}}
	if n := b.Status.BackupItemOperationsAttempted; n > 0 && b.Status.Phase != salvorv1.BackupPhaseInProgress {
		out = append(out, progressLine{"ops", fmt.Sprintf("  operations: %d of %d completed, %d failed",
			b.Status.BackupItemOperationsCompleted, n, b.Status.BackupItemOperationsFailed)})
	}
	for _, op := range b.Status.RunningOperations {
		out = append(out, progressLine{"op " + op.Plugin + " " + op.OperationID,
			fmt.Sprintf("  %s on %s: %d of %d %s %s", op.Plugin, op.Item, op.NCompleted, op.NTotal, op.Units, op.Description)})
	}
	return out
}

// barsOf is what the bars show of a backup: its items, and each running
// operation.
func barsOf(b *salvorv1.Backup) (string, int64, int64, []output.Sub) {
	done, total := 0, 0
	if p := b.Status.Progress; p != nil {
		done, total = p.ItemsBackedUp, p.TotalItems
	}
	subs := make([]output.Sub, 0, len(b.Status.RunningOperations))
	for _, op := range b.Status.RunningOperations {
		subs = append(subs, output.Sub{Key: op.Plugin + " " + op.OperationID, Label: fmt.Sprintf("  %s %s", op.Plugin, op.Item),
			Units: op.Units, Done: op.NCompleted, Total: op.NTotal})
	}
	return phase(*b), int64(done), int64(total), subs
}
