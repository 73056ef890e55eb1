package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// errVerifyFailed makes the command exit non-zero once it has printed why.
var errVerifyFailed = errors.New("verification failed")

// verifyOptions are `backup verify`'s flags.
type verifyOptions struct {
	prefix  string
	wait    bool
	timeout time.Duration
	format  output.Format
}

func newVerify(k *kube.Options) *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify NAME",
		Short: "Check that a backup is whole and unchanged in its location, optionally by restoring it",
		Long: `Asks the server to re-read the backup's objects from its location and check
them against the manifest written with the backup (the SHA-256 of every object
and of every item in its tarball), read the tarball whole under the restore's
safety checks, and compare its items with its resource list. Each object is
reported ok, missing, changed (or, for a backup written by Velero, which has
no manifest, unchecked: read and parsed only).

With --restore-into-prefix P the backup is also restored into namespaces named
P-<namespace> (never into the original ones, nothing cluster-scoped, no
volumes), every restored object is compared with the backup, and the P-
namespaces are deleted whatever the outcome. The server needs the right to
delete namespaces for this (salvor install --test-restores).

The outcome is recorded in the Backup's status.verification; the command
exits non-zero when verification failed.`,
		Example: `  salvor backup verify nightly
  salvor backup verify nightly --restore-into-prefix drill`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, k, args[0]) },
	}
	o.bind(cmd.Flags())
	return cmd
}

func (o *verifyOptions) bind(f *pflag.FlagSet) {
	f.StringVar(&o.prefix, "restore-into-prefix", "", "also restore the backup into namespaces named PREFIX-<namespace>, compare, and delete them")
	f.BoolVar(&o.wait, "wait", true, "wait for the outcome and print it")
	f.DurationVar(&o.timeout, "timeout", 0, "give up waiting after this long (0: no limit); the verification goes on")
	output.AddFlag(f, &o.format)
}

// verifiable says why b cannot be verified, if it cannot: a backup still
// running may be asked (the server verifies it once it is whole), one
// that ended without being whole may not.
func verifiable(b *salvorv1.Backup) error {
	switch b.Status.Phase {
	case salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed:
		return nil
	}
	if finished(b.Status.Phase) {
		return fmt.Errorf("backup %s is %s: only a whole backup (Completed or PartiallyFailed) can be verified", b.Name, b.Status.Phase)
	}
	return nil
}

// run asks the server to verify backup name (an annotation naming the
// request) and, with --wait, prints the outcome of that request.
func (o *verifyOptions) run(cmd *cobra.Command, k *kube.Options, name string) error {
	c, err := k.ClientFor(o.format)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	b, err := kube.Get[salvorv1.Backup](ctx, c, k.Namespace, "backup", name)
	if err != nil {
		return err
	}
	if err := verifiable(b); err != nil {
		return err
	}
	request := strconv.FormatInt(time.Now().UnixNano(), 36)
	// An empty prefix removes the one an earlier verification asked for.
	if err := kube.Annotate(ctx, c, b, map[string]string{salvorv1.VerifyAnnotation: request, salvorv1.VerifyPrefixAnnotation: o.prefix}); err != nil {
		return fmt.Errorf("asking for the verification of backup %s: %w", b.Name, err)
	}
	if !o.wait {
		fmt.Fprintf(cmd.OutOrStdout(), "Backup %q is being verified; see `salvor backup describe %s`.\n", b.Name, b.Name)
		return nil
	}
	if o.timeout > 0 {
		var cancel func()
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	v, err := awaitVerification(ctx, cmd.OutOrStdout(), c, b, request)
	if err != nil {
		return err
	}
	return o.outcome(cmd.OutOrStdout(), b.Name, v)
}

// awaitVerification polls b until the server has answered request,
// saying on w when it has not picked the request up yet.
func awaitVerification(ctx context.Context, w io.Writer, c client.Client, b *salvorv1.Backup, request string) (*salvorv1.BackupVerification, error) {
	pickup := &output.Pickup{Kind: "backup verification", Name: b.Name, Namespace: b.Namespace}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		cur := &salvorv1.Backup{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), cur); err != nil {
			return nil, fmt.Errorf("waiting for the verification of backup %s: %w", b.Name, err)
		}
		v := cur.Status.Verification
		started := v != nil && v.Request == request
		if started && v.Phase != salvorv1.VerificationPhaseInProgress {
			return v, nil
		}
		pickup.Check(w, !started)
		select {
		case <-ctx.Done():
			return nil, pickup.Stopped(!started, ctx.Err())
		case <-tick.C:
		}
	}
}

// outcome prints a verification's result in the asked format and fails
// when the verification did.
func (o *verifyOptions) outcome(w io.Writer, backup string, v *salvorv1.BackupVerification) error {
	done, err := o.format.Structured(w, v)
	if err != nil {
		return err
	}
	if !done {
		DescribeVerification(w, v)
	}
	if v.Phase == salvorv1.VerificationPhaseFailed {
		return fmt.Errorf("backup %s: %w", backup, errVerifyFailed)
	}
	return nil
}

// DescribeVerification prints a verification's outcome, object by object.
func DescribeVerification(w io.Writer, v *salvorv1.BackupVerification) {
	fmt.Fprintf(w, "Verification: %s", v.Phase)
	if v.CompletionTimestamp != nil {
		fmt.Fprintf(w, " (%s)", output.Time(v.CompletionTimestamp))
	}
	fmt.Fprintln(w)
	if !v.Manifest && len(v.Objects) > 0 {
		fmt.Fprintln(w, "  No manifest: the backup was written by Velero (or an older Salvor); objects were read and parsed, not checksummed.")
	}
	if v.Message != "" {
		fmt.Fprintf(w, "  %s\n", v.Message)
	}
	if a := v.Authentication; a != nil {
		fmt.Fprintf(w, "  Authentication: %s (%s)\n", a.State, a.Message)
	}
	if v.Items > 0 {
		fmt.Fprintf(w, "  Items read whole: %d\n", v.Items)
	}
	var rows [][]string
	for _, o := range v.Objects {
		rows = append(rows, []string{o.Name, o.Result, o.Detail})
	}
	if len(rows) > 0 {
		_ = output.IndentedTable(w, "  ", []string{"OBJECT", "RESULT", "DETAIL"}, rows)
	}
	var volumes [][]string
	for _, vol := range v.Volumes {
		volumes = append(volumes, []string{vol.Name, vol.Kind, vol.Result, vol.Detail})
	}
	if len(volumes) > 0 {
		_ = output.IndentedTable(w, "  ", []string{"VOLUME", "KEPT AS", "RESULT", "DETAIL"}, volumes)
	}
	if tr := v.TestRestore; tr != nil {
		fmt.Fprintf(w, "  Test restore: %s into %s (prefix %s)\n", output.Or(tr.Restore, "not started"), output.List(tr.Namespaces, "no namespaces"), tr.Prefix)
		if tr.RestorePhase != "" {
			fmt.Fprintf(w, "    Restore ended %s; %d objects compared, %d identical to the backup, %d differ, %d left out by the restore's rules\n",
				tr.RestorePhase, tr.Compared, tr.Identical, len(tr.Differing), tr.NotRestored)
		}
		for _, d := range tr.Differing {
			fmt.Fprintf(w, "    differs: %s\n", d)
		}
		if tr.RestorePhase != "" {
			fmt.Fprintln(w, "    Made inert: a deny-all NetworkPolicy in each namespace, and")
			if len(tr.Neutralized) == 0 {
				fmt.Fprintln(w, "      no workload, schedule, load balancer, node port, external IP or ingress to neutralize")
			}
			for _, n := range tr.Neutralized {
				fmt.Fprintf(w, "      %s\n", n)
			}
		}
		if tr.CleanedUp {
			fmt.Fprintln(w, "    Cleaned up: its namespaces were deleted")
		}
		if tr.Message != "" {
			fmt.Fprintf(w, "    %s\n", tr.Message)
		}
	}
	if len(v.Failures) > 0 {
		fmt.Fprintln(w, "  Failures:")
		for _, f := range v.Failures {
			fmt.Fprintf(w, "    %s\n", f)
		}
	}
}
