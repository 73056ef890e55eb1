package backup

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// describeOptions are `salvor backup describe`'s flags. What it shows
// beyond the backup's own fields is a function of them and the backup
// (sections); run fetches and prints those.
type describeOptions struct {
	format         output.Format
	details, watch bool
	trust          Trust
}

func newDescribe(k *kube.Options) *cobra.Command {
	o := &describeOptions{}
	cmd := &cobra.Command{
		Use:     "describe NAME",
		Short:   "Show a backup's spec, progress and outcome",
		Example: "  salvor backup describe nightly",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, k, args[0])
		},
	}
	output.AddFlag(cmd.Flags(), &o.format)
	cmd.Flags().BoolVar(&o.details, "details", false, "also show the backup's resource list (every item it holds), each plugin operation, and the warnings and errors")
	cmd.Flags().BoolVar(&o.watch, "watch", false, "show live progress (items and each running operation) until the backup ends, then describe it")
	o.trust.AddFlags(cmd.Flags())
	return kube.Describes(cmd, k, "backup", &salvorv1.BackupList{})
}

// sections are what a description shows after the backup's own fields.
type sections struct {
	verification, volumes, operations, resourceList, results bool
}

// sections says which of them b has to show: its verification and
// volumes when it has them; its plugin operations while they run, or
// with --details; its resource list and its warnings and errors with
// --details, once it has written them.
func (o *describeOptions) sections(b *salvorv1.Backup) sections {
	st := b.Status
	return sections{
		verification: st.Verification != nil,
		volumes:      st.VolumeSnapshotsAttempted > 0,
		operations:   st.BackupItemOperationsAttempted > 0 && (o.details || waiting(st.Phase)),
		resourceList: o.details && hasFiles(st.Phase),
		results:      o.details && (st.Errors > 0 || st.Warnings > 0),
	}
}

func (o *describeOptions) run(cmd *cobra.Command, k *kube.Options, name string) error {
	c, b, shown, err := kube.Show[salvorv1.Backup](cmd, k, o.format, "backup", name)
	if shown || err != nil {
		return err
	}
	ctx, w := cmd.Context(), cmd.OutOrStdout()
	if o.watch {
		if b, err = Wait(ctx, c, b, w); err != nil {
			return err
		}
	}
	describe(w, b)
	show := o.sections(b)
	if show.verification {
		fmt.Fprintln(w)
		DescribeVerification(w, b.Status.Verification)
	}
	if show.volumes {
		describeVolumes(ctx, w, c, b)
	}
	if show.operations {
		if ops, err := operationsOf(ctx, c, b, o.trust); err != nil {
			fmt.Fprintf(w, "\nItem operations: not available (%v)\n", err)
		} else {
			describeOperations(w, b, ops, o.details)
		}
	}
	if show.resourceList {
		DescribeResourceList(ctx, w, c, b.Namespace, salvorv1.DownloadTargetBackupResourceList, b.Name, o.trust)
	}
	if show.results {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		rc, err := Download(ctx, c, k.Namespace, salvorv1.DownloadTargetBackupResults, b.Name, o.trust)
		if err != nil {
			fmt.Fprintf(w, "\nResults: not available (%v)\n", err)
			return nil
		}
		defer rc.Close()
		raw, _ := io.ReadAll(rc)
		output.Results(w, raw)
	}
	return nil
}

// hasFiles says whether a backup in this phase has written its files.
func hasFiles(p salvorv1.BackupPhase) bool {
	switch p {
	case "", salvorv1.BackupPhaseNew, salvorv1.BackupPhaseFailedValidation, salvorv1.BackupPhaseInProgress:
		return false
	}
	return true
}

// DescribeResourceList prints a backup's resource list (what it holds, by
// apiVersion and kind) or a restore's (what became of each item, by
// resource), as Velero's describe --details does.
func DescribeResourceList(ctx context.Context, w io.Writer, c client.Client, namespace string, kind salvorv1.DownloadTargetKind, name string, trust Trust) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rc, err := Download(ctx, c, namespace, kind, name, trust)
	if err != nil {
		fmt.Fprintf(w, "\nResource list: not available (%v)\n", err)
		return
	}
	defer rc.Close()
	var list map[string][]string
	if err := json.NewDecoder(io.LimitReader(rc, 256<<20)).Decode(&list); err != nil {
		fmt.Fprintf(w, "\nResource list: not readable (%v)\n", err)
		return
	}
	fmt.Fprintln(w)
	resourceList(w, list)
}

// resourceList prints a resource list: each key (apiVersion/kind, or
// resource), sorted, and its items (namespace/name, or name) in the order
// the list holds them.
func resourceList(w io.Writer, list map[string][]string) {
	if len(list) == 0 {
		fmt.Fprintln(w, "Resource list: none")
		return
	}
	fmt.Fprintln(w, "Resource list:")
	for _, gvk := range slices.Sorted(maps.Keys(list)) {
		fmt.Fprintf(w, "  %s:\n", gvk)
		for _, item := range list[gvk] {
			fmt.Fprintf(w, "    - %s\n", item)
		}
	}
}

// unanswered is how long a deletion may go without the server acting on
// it before the user is told no server may be running.
const unanswered = 10 * time.Second

// deletion says where a requested deletion is: what it waits for, or that
// no server has acted on it ("" when none was requested).
func deletion(b *salvorv1.Backup, now time.Time) string {
	if b.DeletionTimestamp == nil {
		return ""
	}
	asked := "requested " + output.Time(b.DeletionTimestamp)
	switch {
	case b.Status.DeletionBlocked != "":
		return asked + "; waits — " + b.Status.DeletionBlocked
	case b.Status.Phase != salvorv1.BackupPhaseDeleting && now.Sub(b.DeletionTimestamp.Time) > unanswered:
		return fmt.Sprintf("%s; no server has acted on it in %s: is `salvor server` running for namespace %s? (`salvor version` asks it)", asked, now.Sub(b.DeletionTimestamp.Time).Round(time.Second), b.Namespace)
	}
	return asked + "; the server removes its files, then the Backup"
}

func describe(w io.Writer, b *salvorv1.Backup) {
	s, st := b.Spec, b.Status
	fmt.Fprintf(w, "Name:         %s\nNamespace:    %s\nPhase:        %s\n", b.Name, b.Namespace, phase(*b))
	if d := deletion(b, time.Now()); d != "" {
		fmt.Fprintf(w, "Deletion:     %s\n", d)
	}
	if st.FailureReason != "" {
		fmt.Fprintf(w, "Failure:      %s\n", st.FailureReason)
	}
	output.Judged(w, st.ValidationErrors, st.IgnoredFields)
	fmt.Fprintf(w, "\nNamespaces:\n  Included:   %s\n  Excluded:   %s\n", output.List(s.IncludedNamespaces, "*"), output.List(s.ExcludedNamespaces, "<none>"))
	cluster := "auto"
	if s.IncludeClusterResources != nil {
		cluster = fmt.Sprint(*s.IncludeClusterResources)
	}
	fmt.Fprintf(w, "Resources:\n  Included:   %s\n  Excluded:   %s\n  Cluster-scoped: %s\n", output.List(s.IncludedResources, "*"), output.List(s.ExcludedResources, "<none>"), cluster)
	fmt.Fprintf(w, "Label selector: %s\nStorage location: %s\n", selector(s.LabelSelector, s.OrLabelSelectors), s.StorageLocation)
	if a := st.Authentication; a != nil {
		fmt.Fprintf(w, "Authentication: %s (%s)\n", a.State, a.Message)
	}
	if len(s.VolumeSnapshotLocations) > 0 {
		fmt.Fprintf(w, "Snapshot location: %s\n", output.List(s.VolumeSnapshotLocations, ""))
	}
	if p := s.ResourcePolicy; p != nil {
		fmt.Fprintf(w, "Resource policies: %s %s\n", strings.ToLower(p.Kind), p.Name)
	}
	for _, res := range slices.Sorted(maps.Keys(s.OrderedResources)) {
		fmt.Fprintf(w, "Ordered %s: %s\n", res, s.OrderedResources[res])
	}
	if name := b.Annotations[salvorv1.VeleroGlobalVolumePoliciesAnnotation]; name != "" {
		fmt.Fprintf(w, "Global volume policies: configmap %s\n", name)
	}
	if s.TTL.Duration > 0 {
		fmt.Fprintf(w, "TTL:          %s\n", s.TTL.Duration)
	}
	describeHooks(w, s.Hooks)
	fmt.Fprintln(w)
	if st.StartTimestamp != nil {
		fmt.Fprintf(w, "Started:      %s\n", output.Time(st.StartTimestamp))
	}
	if st.CompletionTimestamp != nil {
		fmt.Fprintf(w, "Completed:    %s", output.Time(st.CompletionTimestamp))
		if st.StartTimestamp != nil {
			fmt.Fprintf(w, " (took %s)", output.Duration(st.CompletionTimestamp.Sub(st.StartTimestamp.Time)))
		}
		fmt.Fprintln(w)
	}
	if st.Expiration != nil {
		fmt.Fprintf(w, "Expires:      %s\n", output.Time(st.Expiration))
	}
	if st.Attempts > 1 {
		fmt.Fprintf(w, "Attempts:     %d (the server restarted during the backup)\n", st.Attempts)
	}
	fmt.Fprintf(w, "Items:        %s backed up\nErrors:       %d\nWarnings:     %d\n", progress(*b), st.Errors, st.Warnings)
	if h := st.HookStatus; h != nil {
		fmt.Fprintf(w, "Hooks:        %d run, %d failed\n", h.HooksAttempted, h.HooksFailed)
	}
	if n := st.BackupItemOperationsAttempted; n > 0 {
		running := n - st.BackupItemOperationsCompleted - st.BackupItemOperationsFailed
		fmt.Fprintf(w, "Item operations: %d of %d completed, %d failed, %d in progress\n",
			st.BackupItemOperationsCompleted, n, st.BackupItemOperationsFailed, running)
	}
}

// describeHooks shows a spec's hooks: which pods each selects, and its
// commands by phase.
func describeHooks(w io.Writer, h *salvorv1.BackupHooks) {
	if h == nil {
		return
	}
	for _, rh := range h.Resources {
		fmt.Fprint(w, output.HookSelection(rh.Name, rh.IncludedNamespaces, rh.ExcludedNamespaces, rh.IncludedResources, rh.ExcludedResources, rh.LabelSelector))
		for _, phase := range []struct {
			name  string
			hooks []salvorv1.BackupResourceHook
		}{{"pre", rh.PreHooks}, {"post", rh.PostHooks}} {
			for _, hook := range phase.hooks {
				if e := hook.Exec; e != nil {
					output.HookCommand(w, phase.name, e.Container, e.Command, string(e.OnError), e.Timeout.Duration)
				}
			}
		}
	}
}

// describeVolumes shows each volume's snapshot: bytes, rate and time left.
func describeVolumes(ctx context.Context, w io.Writer, c client.Client, b *salvorv1.Backup) {
	list := &salvorv1.VolumePluginBackupList{}
	if err := c.List(ctx, list, client.InNamespace(b.Namespace), client.MatchingLabels{salvorv1.BackupNameLabel: salvorv1.LabelValue(b.Name)}); err != nil {
		fmt.Fprintf(w, "\nVolumes: not available (%v)\n", err)
		return
	}
	fmt.Fprintf(w, "\nVolume snapshots: %d of %d completed\n", b.Status.VolumeSnapshotsCompleted, b.Status.VolumeSnapshotsAttempted)
	var rows [][]string
	for _, v := range list.Items {
		st := v.Status
		rows = append(rows, slices.Concat([]string{v.Spec.Volume}, VolumeProgress(st.VolumePluginStatus), []string{st.SnapshotID}))
	}
	_ = output.IndentedTable(w, "  ", slices.Concat([]string{"VOLUME"}, VolumeProgressHeader, []string{"SNAPSHOT"}), rows)
}

// VolumeProgressHeader heads the columns VolumeProgress fills.
var VolumeProgressHeader = []string{"PHASE", "PROGRESS", "RATE", "LEFT"}

// VolumeProgress is a volume copy's phase, bytes done of total, rate and
// time left, as table cells; shared by backups' and restores' describe.
func VolumeProgress(st salvorv1.VolumePluginStatus) []string {
	phase, p, percent, started, updated := st.Phase, st.Progress, st.Percent, st.StartTimestamp, st.Updated
	rate, left := "-", "-"
	if started != nil && updated != nil {
		if secs := updated.Sub(started.Time).Seconds(); secs > 0 && p.BytesDone > 0 {
			bps := float64(p.BytesDone) / secs
			rate = fmt.Sprintf("%.1f MiB/s", bps/(1<<20))
			// Only a copy still going has time left: a cancelled or failed
			// one's last figures would promise an end that never comes.
			if phase == "InProgress" && p.TotalBytes > p.BytesDone {
				left = time.Duration(float64(p.TotalBytes-p.BytesDone) / bps * float64(time.Second)).Round(time.Second).String()
			}
		}
	}
	return []string{phase, fmt.Sprintf("%d / %d bytes (%d%%)", p.BytesDone, p.TotalBytes, percent), rate, left}
}
