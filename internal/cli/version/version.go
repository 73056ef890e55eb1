package version

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/buildinfo"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// NewCommand returns `salvor version`.
func NewCommand(k *kube.Options) *cobra.Command {
	var clientOnly bool
	var timeout time.Duration
	var format output.Format
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show the CLI's version and the server's",
		Long: `Prints the CLI's version, commit and build date, then asks the server that
handles Salvor's namespace for its own (and the plugins it runs). With
--client-only it does not contact the cluster.`,
		Example: "  salvor version\n  salvor version --client-only\n  salvor version -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := format.Validate(); err != nil {
				return err
			}
			report := struct {
				Client buildinfo.Info                      `json:"client"`
				Server *salvorv1.ServerStatusRequestStatus `json:"server,omitempty"`
			}{Client: buildinfo.Get()}
			var serverErr error
			if !clientOnly {
				report.Server, serverErr = AskServer(cmd.Context(), k, timeout)
			}
			out := cmd.OutOrStdout()
			if done, err := format.Structured(out, report); done {
				if err != nil {
					return err
				}
				return serverErr
			}
			printClient(out, report.Client)
			if report.Server != nil {
				printServer(out, report.Server)
			}
			return serverErr
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client-only", false, "show only the CLI's version")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait for the server's answer")
	output.AddFlag(cmd.Flags(), &format)
	return cmd
}

func printClient(w io.Writer, i buildinfo.Info) {
	fmt.Fprintf(w, "Client:\n  Version:    %s\n  Commit:     %s\n  Built:      %s\n  Go:         %s %s\n", i.Version, i.Commit, i.BuildDate, i.GoVersion, i.Platform)
}

func printServer(w io.Writer, s *salvorv1.ServerStatusRequestStatus) {
	fmt.Fprintf(w, "Server:\n  Version:    %s\n  Commit:     %s\n  Built:      %s\n  Go:         %s\n  Plugins:    %d\n",
		s.ServerVersion, s.ServerCommit, s.ServerBuildDate, s.ServerGoVersion, len(s.Plugins))
}

// AskServer creates a ServerStatusRequest and waits for the answer of the
// server that handles k.Namespace: its build and the plugins it runs.
func AskServer(ctx context.Context, k *kube.Options, timeout time.Duration) (*salvorv1.ServerStatusRequestStatus, error) {
	c, err := k.Client()
	if err != nil {
		return nil, err
	}
	req := &salvorv1.ServerStatusRequest{ObjectMeta: metav1.ObjectMeta{GenerateName: "salvor-version-", Namespace: k.Namespace}}
	if err := c.Create(ctx, req); err != nil {
		return nil, fmt.Errorf("asking the server for its version (creating a ServerStatusRequest in namespace %s): %w", k.Namespace, err)
	}
	// The server deletes it a minute after answering; if none answers, it
	// is not left behind.
	defer func() { _ = c.Delete(context.Background(), req) }()
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(req), req); err != nil {
			return false, err
		}
		return req.Status.Phase == salvorv1.ServerStatusRequestPhaseProcessed, nil
	})
	if err != nil {
		return nil, fmt.Errorf("no server answered in namespace %s within %s: is `salvor server` running there? (kubectl -n %s get pods; -n names Salvor's namespace)",
			k.Namespace, timeout, k.Namespace)
	}
	return &req.Status, nil
}
