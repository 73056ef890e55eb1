package restore

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clibackup "github.com/salvor-dev/salvor/internal/cli/backup"
	"github.com/salvor-dev/salvor/internal/cli/get"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	"github.com/salvor-dev/salvor/internal/cli/veleroflag"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// NewCommand returns `salvor restore` and its verbs.
func NewCommand(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{Use: "restore", Aliases: []string{"restores"}, Short: "Work with restores"}
	cmd.AddCommand(newCreate(k), newGet(k), newDescribe(k), newLogs(k), newCancel(k), newDelete(k))
	return cmd
}

type createOptions struct {
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
	var format output.Format
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
			switch {
			case o.backup == "" && o.schedule == "":
				return fmt.Errorf("say what to restore: --from-backup BACKUP (salvor backup get lists them) or --from-schedule SCHEDULE (its newest Completed backup)")
			case o.backup != "" && o.schedule != "":
				return fmt.Errorf("give --from-backup (the backup to restore) or --from-schedule (restore its newest Completed backup), not both")
			}
			mapping := map[string]string{}
			for _, m := range o.mappings {
				from, to, ok := strings.Cut(m, ":")
				if !ok || from == "" || to == "" {
					return fmt.Errorf("--namespace-mappings %q: want from:to, e.g. shop:shop-copy", m)
				}
				mapping[from] = to
			}
			if len(mapping) == 0 {
				mapping = nil
			}
			name := salvorv1.SuffixedName(o.backup+o.schedule, "-"+time.Now().UTC().Format("20060102150405"), 253)
			if len(args) == 1 {
				name = args[0]
			}
			rs := &salvorv1.Restore{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.Namespace, Labels: o.labels, Annotations: o.annotations},
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
				},
			}
			var err error
			if rs.Spec.LabelSelector, rs.Spec.OrLabelSelectors, err = veleroflag.Selectors(o.selector, o.orSelector); err != nil {
				return err
			}
			if rs.Spec.IncludeClusterResources, err = clibackup.OptionalBool("include-cluster-resources", o.includeClusterResources); err != nil {
				return err
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
			switch {
			case len(o.statusInclude) > 0:
				rs.Spec.RestoreStatus = &salvorv1.RestoreStatusSpec{IncludedResources: o.statusInclude, ExcludedResources: o.statusExclude}
			case len(o.statusExclude) > 0:
				return fmt.Errorf("--status-exclude-resources narrows --status-include-resources, which is not given: name the resources whose status to restore (\"*\" for all)")
			}
			if rs.Spec.RestorePVs, err = clibackup.OptionalBool("restore-volumes", o.restoreVolumes); err != nil {
				return err
			}
			rs.Spec.TrustBackupSnapshots = o.trustSnapshots
			if rs.Spec.AnnotationHooks, err = clibackup.OptionalBool("annotation-hooks", o.annotationHooks); err != nil {
				return err
			}
			if o.allowPartiallyFailed && o.schedule == "" {
				return fmt.Errorf("--allow-partially-failed is for --from-schedule: a backup given with --from-backup is restored whether Completed or PartiallyFailed")
			}
			c, err := k.Client()
			if err != nil {
				return err
			}
			if o.allowPartiallyFailed {
				// As Velero's CLI does: pick here, and name the backup; with
				// none to pick, the server judges the schedule as usual.
				if rs.Spec.BackupName, err = newestOfSchedule(cmd.Context(), c, k.Namespace, o.schedule); err != nil {
					return err
				}
			}
			velero, err := veleroflag.Fields(cmd.Flags(), veleroFlags)
			if err != nil {
				return err
			}
			if printed, err := kube.Print(cmd.OutOrStdout(), c, format, rs, velero, "spec"); printed || err != nil {
				return err
			}
			if err := kube.CreateWith(cmd.Context(), c, rs, velero, "spec"); err != nil {
				return fmt.Errorf("creating restore %s: %w", name, err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Restore %q submitted.\n", name)
			if !o.wait {
				fmt.Fprintf(out, "Run `salvor restore describe %s` to see how it goes.\n", name)
				return nil
			}
			final, err := wait(cmd.Context(), c, rs, out)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Restore %s: %s. Run `salvor restore describe %s` for details.\n", final.Name, final.Status.Phase, final.Name)
			if final.Status.Phase != salvorv1.RestorePhaseCompleted {
				return fmt.Errorf("restore %s ended %s", final.Name, final.Status.Phase)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.backup, "from-backup", "", "the backup to restore")
	f.BoolVar(&o.preserveNodePorts, "preserve-nodeports", false, "keep every Service node port the backup holds (default: keep those someone set, let the cluster assign the others)")
	f.StringVar(&o.schedule, "from-schedule", "", "restore the schedule's newest Completed backup (picked by the server when the restore starts)")
	veleroflag.Add(f, veleroFlags)
	f.StringSliceVar(&o.statusInclude, "status-include-resources", nil, `resources whose items get back the status the backup holds, after they are made (Velero's flag; "*" for all; an item's annotation velero.io/restore-status says otherwise)`)
	f.StringSliceVar(&o.statusExclude, "status-exclude-resources", nil, "resources left out of --status-include-resources")
	f.StringVar(&o.resourcePolicies, "resource-policies-configmap", "", "a ConfigMap in the server's namespace holding resource policies (Velero's format): its clusterScopedFilterPolicy and namespacedFilterPolicies choose items per resource and per namespace")
	f.StringVar(&o.modifiers, "resource-modifier-configmap", "", "a ConfigMap in the server's namespace holding resource modifier rules (Velero's format): patches applied to the items they select before they are created")
	f.BoolVar(&o.allowPartiallyFailed, "allow-partially-failed", false, "with --from-schedule: restore its newest Completed or PartiallyFailed backup")
	kube.AddPrintFlag(f, &format)
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
	return cmd
}

func restoreFinished(p salvorv1.RestorePhase) bool {
	switch p {
	case salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed, salvorv1.RestorePhaseFailedValidation:
		return true
	}
	return false
}

func phase(rs *salvorv1.Restore) string {
	if rs.Status.Phase == "" {
		return "New"
	}
	return string(rs.Status.Phase)
}

func progress(rs *salvorv1.Restore) (int, int) {
	if p := rs.Status.Progress; p != nil {
		return p.ItemsRestored, p.TotalItems
	}
	return 0, 0
}

// itemsText says how far a restore's items are, in the words of what
// happened to them: checked for a dry run, created / updated / skipped /
// failed once the pass has counted them, done while it runs.
func itemsText(rs *salvorv1.Restore) string {
	done, total := progress(rs)
	switch o := rs.Status.Outcomes; {
	case rs.Spec.DryRun:
		text := fmt.Sprintf("%d of %d items checked, nothing written", done, total)
		if d := rs.Status.DryRun; d != nil {
			text += fmt.Sprintf(" (would create %d, identical %d, differing %d, skip %d, fail %d)", d.WouldCreate, d.Identical, d.Differs, d.Skipped, d.WouldFail)
		}
		return text
	case o != nil:
		return fmt.Sprintf("%d of %d items: %d created, %d updated, %d skipped, %d failed", done, total, o.Created, o.Updated, o.Skipped, o.Failed)
	}
	return fmt.Sprintf("%d of %d items done", done, total)
}

// progressLine is what `restore create --wait` prints of a restore.
func progressLine(rs *salvorv1.Restore) string {
	line := phase(rs) + ": " + itemsText(rs)
	if _, total := progress(rs); rs.Status.Phase == salvorv1.RestorePhaseInProgress && total == 0 {
		// The server checks and spools the whole backup before it counts
		// the items to restore.
		line = fmt.Sprintf("%s: reading backup %s", phase(rs), rs.Spec.BackupName)
	}
	if n := rs.Status.RestoreItemOperationsAttempted; n > 0 {
		line += fmt.Sprintf("; operations %d of %d completed, %d failed", rs.Status.RestoreItemOperationsCompleted, n, rs.Status.RestoreItemOperationsFailed)
	}
	return line
}

// volumeLines are what `restore create --wait` prints of the restore's
// volumes still being made (their VolumePluginRestores), a line each,
// keyed by the volume's resource.
func volumeLines(vprs []salvorv1.VolumePluginRestore) map[string]string {
	out := map[string]string{}
	for _, v := range vprs {
		what := cmp.Or(v.Spec.PluginSpecific["claim"], v.Spec.SnapshotID)
		line := fmt.Sprintf("  %s %s: %s", v.Spec.Plugin, what, cmp.Or(v.Status.Phase, "New"))
		if p := v.Status.Progress; p.TotalBytes > 0 {
			line += fmt.Sprintf(", %d of %d bytes (%d%%)", p.BytesDone, p.TotalBytes, 100*p.BytesDone/p.TotalBytes)
		}
		if v.Status.Message != "" {
			line += ": " + v.Status.Message
		}
		out[v.Name] = line
	}
	return out
}

// volumeBars are the bars of the restore's volumes still being made:
// their bytes, once the plugin has said how many.
func volumeBars(vprs []salvorv1.VolumePluginRestore) []output.Sub {
	var subs []output.Sub
	for _, v := range vprs {
		switch v.Status.Phase {
		case "Completed", "Failed", "Canceled":
			continue
		}
		what := cmp.Or(v.Spec.PluginSpecific["claim"], v.Spec.SnapshotID)
		subs = append(subs, output.Sub{Key: v.Name, Label: fmt.Sprintf("  %s %s", v.Spec.Plugin, what), Units: "bytes",
			Done: v.Status.Progress.BytesDone, Total: v.Status.Progress.TotalBytes})
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Key < subs[j].Key })
	return subs
}

// wait follows the restore until it ends: on a terminal, bars for its
// items and each volume being made (its bytes); elsewhere a line per
// change. The line that says how it ended is printed either way.
func wait(ctx context.Context, c client.Client, rs *salvorv1.Restore, out io.Writer) (*salvorv1.Restore, error) {
	var bars *output.Bars
	if width, ok := output.TerminalWidth(out); ok {
		bars = output.NewBars(out, rs.Name, "items", width)
		defer func() {
			if bars != nil {
				bars.Stop()
			}
		}()
	}
	last := ""
	lastVolumes := map[string]string{}
	pickup := &output.Pickup{Kind: "restore", Name: rs.Name, Namespace: rs.Namespace}
	for {
		cur := &salvorv1.Restore{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(rs), cur); err != nil {
			return nil, fmt.Errorf("watching restore %s: %w", rs.Name, err)
		}
		// Volumes' bytes, where the user may read them (salvor-viewer
		// may); without that right the wait goes on without them.
		vprs := &salvorv1.VolumePluginRestoreList{}
		listed := c.List(ctx, vprs, client.InNamespace(rs.Namespace), client.MatchingLabels{salvorv1.RestoreNameLabel: salvorv1.LabelValue(rs.Name)}) == nil
		if bars != nil {
			done, total := progress(cur)
			bars.Update(phase(cur), int64(done), int64(total), volumeBars(vprs.Items))
			if restoreFinished(cur.Status.Phase) {
				// The bars end, then what became of the items.
				bars.Stop()
				bars = nil
				fmt.Fprintln(out, progressLine(cur))
				return cur, nil
			}
		}
		line := progressLine(cur)
		if bars == nil && line != last {
			fmt.Fprintln(out, line)
			last = line
		}
		if bars == nil && listed {
			lines := volumeLines(vprs.Items)
			keys := make([]string, 0, len(lines))
			for k := range lines {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if lines[k] != lastVolumes[k] {
					fmt.Fprintln(out, lines[k])
					lastVolumes[k] = lines[k]
				}
			}
		}
		if restoreFinished(cur.Status.Phase) {
			return cur, nil
		}
		isNew := cur.Status.Phase == "" || cur.Status.Phase == salvorv1.RestorePhaseNew
		pickup.Check(out, isNew)
		select {
		case <-ctx.Done():
			return nil, pickup.Stopped(isNew, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func newGet(k *kube.Options) *cobra.Command {
	return get.Command[salvorv1.Restore](k, "restore", "List restores", "  salvor restore get\n  salvor restore get r1 -o yaml",
		&salvorv1.RestoreList{}, get.Table[salvorv1.Restore]{
			Header: []string{"NAME", "BACKUP", "STATUS", "ITEMS", "ERRORS", "WARNINGS", "AGE"},
			Row: func(rs *salvorv1.Restore) []string {
				done, total := progress(rs)
				return []string{rs.Name, rs.Spec.BackupName, phase(rs), fmt.Sprintf("%d/%d", done, total),
					fmt.Sprint(rs.Status.Errors), fmt.Sprint(rs.Status.Warnings), output.Duration(time.Since(rs.CreationTimestamp.Time))}
			},
			WideHeader: []string{"NAMESPACES", "MAPPING", "STARTED", "COMPLETED"},
			WideRow: func(rs *salvorv1.Restore) []string {
				var mapping []string
				for from, to := range rs.Spec.NamespaceMapping {
					mapping = append(mapping, from+":"+to)
				}
				sort.Strings(mapping)
				return []string{output.Filter(rs.Spec.IncludedNamespaces, rs.Spec.ExcludedNamespaces), strings.Join(mapping, ","),
					output.Time(rs.Status.StartTimestamp), output.Time(rs.Status.CompletionTimestamp)}
			},
		})
}

func newDescribe(k *kube.Options) *cobra.Command {
	var format output.Format
	var details bool
	var trust clibackup.Trust
	cmd := &cobra.Command{
		Use: "describe NAME", Short: "Show a restore's spec, progress and outcome", Example: "  salvor restore describe r1 --details",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, rs, shown, err := kube.Show[salvorv1.Restore](cmd, k, format, "restore", args[0])
			if shown || err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			s, st := rs.Spec, rs.Status
			fmt.Fprintf(w, "Name:         %s\nBackup:       %s\n", rs.Name, s.BackupName)
			if s.ScheduleName != "" {
				fmt.Fprintf(w, "Schedule:     %s\n", s.ScheduleName)
			}
			fmt.Fprintf(w, "Phase:        %s\n", phase(rs))
			if st.FailureReason != "" {
				fmt.Fprintf(w, "Failure:      %s\n", st.FailureReason)
			}
			output.Judged(w, st.ValidationErrors, st.IgnoredFields)
			var maps []string
			for from, to := range s.NamespaceMapping {
				maps = append(maps, from+" → "+to)
			}
			policy := string(s.ExistingResourcePolicy)
			if policy == "" {
				policy = "none"
			}
			fmt.Fprintf(w, "Namespaces:   %s (excluded: %s)\nMappings:     %s\nExisting resources: %s\n",
				output.List(s.IncludedNamespaces, "*"), output.List(s.ExcludedNamespaces, "<none>"), output.List(maps, "<none>"), policy)
			if m := s.ResourceModifier; m != nil {
				fmt.Fprintf(w, "Modifiers:    %s %s\n", strings.ToLower(m.Kind), m.Name)
			}
			if p := s.ResourcePolicy; p != nil {
				fmt.Fprintf(w, "Resource policies: %s %s\n", strings.ToLower(p.Kind), p.Name)
			}
			if rst := s.RestoreStatus; rst != nil {
				fmt.Fprintf(w, "Status of:    %s (excluded: %s)\n", output.List(rst.IncludedResources, "*"), output.List(rst.ExcludedResources, "<none>"))
			}
			describeHooks(w, s.Hooks)
			fmt.Fprintf(w, "Started:      %s\nCompleted:    %s\n", output.Time(st.StartTimestamp), output.Time(st.CompletionTimestamp))
			if s.DryRun {
				done, total := progress(rs)
				fmt.Fprintf(w, "Dry run:      nothing was written\nItems:        %d of %d checked\nErrors:       %d\nWarnings:     %d\n", done, total, st.Errors, st.Warnings)
				if d := st.DryRun; d != nil {
					fmt.Fprintf(w, "Would:        create %d, leave %d identical, find %d differing, skip %d, fail %d\n", d.WouldCreate, d.Identical, d.Differs, d.Skipped, d.WouldFail)
				}
			} else {
				fmt.Fprintf(w, "Items:        %s\nErrors:       %d\nWarnings:     %d\n", itemsText(rs), st.Errors, st.Warnings)
			}
			if h := st.HookStatus; h != nil {
				fmt.Fprintf(w, "Hooks:        %d run, %d failed\n", h.HooksAttempted, h.HooksFailed)
			}
			if n := st.RestoreItemOperationsAttempted; n > 0 {
				fmt.Fprintf(w, "Item operations: %d of %d completed, %d failed, %d in progress\n", st.RestoreItemOperationsCompleted, n,
					st.RestoreItemOperationsFailed, n-st.RestoreItemOperationsCompleted-st.RestoreItemOperationsFailed)
			}
			if details {
				describeVolumes(cmd.Context(), w, c, rs)
			}
			if details && !s.DryRun && restoredItems(st.Phase) {
				clibackup.DescribeResourceList(cmd.Context(), w, c, rs.Namespace, salvorv1.DownloadTargetRestoreResourceList, rs.Name, trust)
			}
			if details && (st.Errors > 0 || st.Warnings > 0 || (s.DryRun && st.DryRun != nil)) {
				ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
				defer cancel()
				rc, err := clibackup.Download(ctx, c, k.Namespace, salvorv1.DownloadTargetRestoreResults, rs.Name, trust)
				if err != nil {
					fmt.Fprintf(w, "\nResults: not available (%v)\n", err)
					return nil
				}
				defer rc.Close()
				b, _ := io.ReadAll(rc)
				output.Results(w, b)
				if s.DryRun {
					output.DryRun(w, b)
				}
			}
			return nil
		},
	}
	output.AddFlag(cmd.Flags(), &format)
	cmd.Flags().BoolVar(&details, "details", false, "also show the volumes restored from snapshots, what became of each item (created, updated, skipped or failed), and the warnings and errors")
	trust.AddFlags(cmd.Flags())
	return kube.Describes(cmd, k, "restore", &salvorv1.RestoreList{})
}

// describeVolumes shows each volume recreated from a snapshot: bytes, rate
// and time left, and the new volume's ID.
func describeVolumes(ctx context.Context, w io.Writer, c client.Client, rs *salvorv1.Restore) {
	list := &salvorv1.VolumePluginRestoreList{}
	if err := c.List(ctx, list, client.InNamespace(rs.Namespace), client.MatchingLabels{salvorv1.RestoreNameLabel: salvorv1.LabelValue(rs.Name)}); err != nil {
		fmt.Fprintf(w, "\nVolumes: not available (%v)\n", err)
		return
	}
	if len(list.Items) == 0 {
		return
	}
	fmt.Fprintf(w, "\nVolumes restored from snapshots:\n")
	var rows [][]string
	for _, v := range list.Items {
		st := v.Status
		rows = append(rows, slices.Concat([]string{v.Spec.SnapshotID}, clibackup.VolumeProgress(st.VolumePluginStatus), []string{st.VolumeID}))
	}
	_ = output.IndentedTable(w, "  ", slices.Concat([]string{"SNAPSHOT"}, clibackup.VolumeProgressHeader, []string{"NEW VOLUME"}), rows)
}

func newLogs(k *kube.Options) *cobra.Command {
	timeout := time.Minute
	var trust clibackup.Trust
	cmd := &cobra.Command{
		Use: "logs NAME", Short: "Print a restore's log", Example: "  salvor restore logs r1", Args: cobra.ExactArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			rc, err := clibackup.Download(ctx, c, k.Namespace, salvorv1.DownloadTargetRestoreLog, args[0], trust)
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(cmd.OutOrStdout(), rc)
			return err
		}),
	}
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "how long to wait for the server")
	trust.AddFlags(cmd.Flags())
	return cmd
}

func newCancel(k *kube.Options) *cobra.Command {
	return &cobra.Command{
		Use: "cancel NAME", Short: "Stop a restore", Example: "  salvor restore cancel r1", Args: cobra.ExactArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			rs, err := kube.Get[salvorv1.Restore](cmd.Context(), c, k.Namespace, "restore", args[0])
			if err != nil {
				return err
			}
			if restoreFinished(rs.Status.Phase) {
				return fmt.Errorf("restore %s has already ended (%s)", rs.Name, rs.Status.Phase)
			}
			if err := kube.Annotate(cmd.Context(), c, rs, map[string]string{salvorv1.CancelAnnotation: "true"}); err != nil {
				return fmt.Errorf("cancelling restore %s: %w", rs.Name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Restore %q is being cancelled.\n", rs.Name)
			return nil
		}),
	}
}

func newDelete(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete restores that have ended (never what they restored)",
		Long: `Deletes Restore objects. The objects a restore created stay in the
cluster, and its log and results stay in the backup's location (under
restores/NAME/). A restore still running is refused: cancel it first
(salvor restore cancel NAME) and delete it once it has ended.`,
		Example: "  salvor restore delete r1 r2",
		Args:    cobra.MinimumNArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			ctx := cmd.Context()
			return kube.Each(ctx, c, k.Namespace, "restore", args, func(rs *salvorv1.Restore) error {
				if !restoreFinished(rs.Status.Phase) {
					return fmt.Errorf("restore %s is %s: cancel it first (salvor restore cancel %s) and delete it once it has ended",
						rs.Name, output.Or(string(rs.Status.Phase), "New"), rs.Name)
				}
				if err := c.Delete(ctx, rs); err != nil {
					return fmt.Errorf("deleting restore %s: %w", rs.Name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Restore %q deleted; what it restored stays, and so do its log and results in the location.\n", rs.Name)
				return nil
			})
		}),
	}
	return kube.Deletes(cmd, k, "restore", &salvorv1.RestoreList{}, "Delete restore %s?")
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

// restoredItems says whether a restore in this phase has finished its pass
// over the items, and so written what became of each.
func restoredItems(p salvorv1.RestorePhase) bool {
	switch p {
	case "", salvorv1.RestorePhaseNew, salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhaseInProgress, salvorv1.RestorePhaseFailed:
		return false
	}
	return true
}

// describeHooks shows a restore's hooks: which pods each selects, its
// commands and its init containers.
func describeHooks(w io.Writer, h *salvorv1.RestoreHooks) {
	if h == nil {
		return
	}
	for _, rh := range h.Resources {
		fmt.Fprint(w, output.HookSelection(rh.Name, rh.IncludedNamespaces, rh.ExcludedNamespaces, rh.IncludedResources, rh.ExcludedResources, rh.LabelSelector))
		for _, hook := range rh.PostHooks {
			if e := hook.Exec; e != nil {
				var extra []string
				if e.WaitForReady != nil && *e.WaitForReady {
					extra = append(extra, "once ready")
				}
				if e.WaitTimeout.Duration > 0 {
					extra = append(extra, "waits "+e.WaitTimeout.Duration.String())
				}
				output.HookCommand(w, "post", e.Container, e.Command, string(e.OnError), e.ExecTimeout.Duration, extra...)
			}
			if i := hook.Init; i != nil {
				fmt.Fprintf(w, "  init %d init containers\n", len(i.InitContainers))
			}
		}
	}
}
