package restore

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

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
	changed, stop := kube.Changes(ctx, c, &salvorv1.RestoreList{}, client.ObjectKeyFromObject(rs))
	defer stop()
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
			if cur.Status.Phase.Ended() {
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
		if cur.Status.Phase.Ended() {
			return cur, nil
		}
		isNew := cur.Status.Phase == "" || cur.Status.Phase == salvorv1.RestorePhaseNew
		pickup.Check(out, isNew)
		select {
		case <-ctx.Done():
			return nil, pickup.Stopped(isNew, ctx.Err())
		case <-changed:
		case <-time.After(500 * time.Millisecond):
		}
	}
}
