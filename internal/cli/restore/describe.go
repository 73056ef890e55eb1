package restore

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clibackup "github.com/salvor-dev/salvor/internal/cli/backup"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// describeOptions are `restore describe`'s flags.
type describeOptions struct {
	format  output.Format
	details bool
	trust   clibackup.Trust
}

func newDescribe(k *kube.Options) *cobra.Command {
	o := &describeOptions{}
	cmd := &cobra.Command{
		Use: "describe NAME", Short: "Show a restore's spec, progress and outcome", Example: "  salvor restore describe r1 --details",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, k, args[0]) },
	}
	output.AddFlag(cmd.Flags(), &o.format)
	cmd.Flags().BoolVar(&o.details, "details", false, "also show the volumes restored from snapshots, what became of each item (created, updated, skipped or failed), and the warnings and errors")
	o.trust.AddFlags(cmd.Flags())
	return kube.Describes(cmd, k, "restore", &salvorv1.RestoreList{})
}

func (o *describeOptions) run(cmd *cobra.Command, k *kube.Options, name string) error {
	c, rs, shown, err := kube.Show[salvorv1.Restore](cmd, k, o.format, "restore", name)
	if shown || err != nil {
		return err
	}
	w, ctx, s, st := cmd.OutOrStdout(), cmd.Context(), rs.Spec, rs.Status
	describe(w, rs)
	if !o.details {
		return nil
	}
	describeVolumes(ctx, w, c, rs)
	if !s.DryRun && restoredItems(st.Phase) {
		clibackup.DescribeResourceList(ctx, w, c, rs.Namespace, salvorv1.DownloadTargetRestoreResourceList, rs.Name, o.trust)
	}
	if st.Errors > 0 || st.Warnings > 0 || (s.DryRun && st.DryRun != nil) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		rc, err := clibackup.Download(ctx, c, k.Namespace, salvorv1.DownloadTargetRestoreResults, rs.Name, o.trust)
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
}

// describe prints what the Restore object itself holds: its spec, phase,
// counts and outcome.
func describe(w io.Writer, rs *salvorv1.Restore) {
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
	slices.Sort(maps)
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
