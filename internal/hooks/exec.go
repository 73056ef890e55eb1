package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// DefaultTimeout bounds a hook whose timeout is not given (Velero's).
const DefaultTimeout = 30 * time.Second

// outputLimit is how much of a command's output is kept for the log and
// for the message of its failure: enough for a diagnosis, not a dump.
const outputLimit = 4 << 10

// Exec is one command to run in a pod.
type Exec struct {
	// Hook names where it came from: the spec's hook name, or the
	// annotation that asked for it.
	Hook      string
	Container string // empty: the pod's first container
	Command   []string
	OnError   salvorv1.HookErrorMode // empty: Fail
	Timeout   time.Duration          // zero: DefaultTimeout
}

// Quoted is the command as messages show it: each word quoted.
func (e Exec) Quoted() string {
	q := make([]string, len(e.Command))
	for i, w := range e.Command {
		q[i] = strconv.Quote(w)
	}
	return "[" + strings.Join(q, " ") + "]"
}

// Fails tells whether a failure of the command stops what follows it.
func (e Exec) Fails() bool { return e.OnError != salvorv1.HookErrorModeContinue }

func (e Exec) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return DefaultTimeout
}

// Runner runs commands in pods through the API server's pods/exec.
type Runner struct {
	config *rest.Config
	pods   rest.Interface
	access authorizationclient.SelfSubjectAccessReviewInterface
}

// NewRunner returns a Runner acting with cfg's identity.
func NewRunner(cfg *rest.Config) (*Runner, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Runner{config: cfg, pods: cs.CoreV1().RESTClient(), access: cs.AuthorizationV1().SelfSubjectAccessReviews()}, nil
}

// Result is what a command printed.
type Result struct {
	Container      string
	Stdout, Stderr string
}

// ErrEnded is the error of a hook not run because its pod has ended
// (Succeeded or Failed): there is nothing left in it to quiesce.
var ErrEnded = errors.New("salvor: the pod has ended")

// Run runs e in pod. The error names the container and says why: the pod
// not running, the container missing, the command's exit code and the
// end of its output, or the timeout.
func (r *Runner) Run(ctx context.Context, pod *unstructured.Unstructured, e Exec) (Result, error) {
	var p corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(pod.Object, &p); err != nil {
		return Result{}, fmt.Errorf("reading the pod: %w", err)
	}
	res := Result{Container: e.Container}
	if res.Container == "" {
		if len(p.Spec.Containers) == 0 {
			return res, errors.New("the pod has no containers")
		}
		res.Container = p.Spec.Containers[0].Name
	} else if !hasContainer(&p, res.Container) {
		return res, fmt.Errorf("the pod has no container %q", res.Container)
	}
	switch p.Status.Phase {
	case corev1.PodRunning:
	case corev1.PodSucceeded, corev1.PodFailed:
		return res, ErrEnded
	default:
		return res, fmt.Errorf("the pod is %s, not Running: no container of it can run the command", phaseName(p.Status.Phase))
	}
	req := r.pods.Post().Resource("pods").Namespace(p.Namespace).Name(p.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: res.Container, Command: e.Command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	// WebSockets first, as kubectl does; SPDY for an API server (or a
	// proxy in front of it) that does not upgrade to them.
	ws, err := remotecommand.NewWebSocketExecutor(r.config, "GET", req.URL().String())
	if err != nil {
		return res, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(r.config, "POST", req.URL())
	if err != nil {
		return res, err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout())
	defer cancel()
	stdout, stderr := &capped{}, &capped{}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() == context.DeadlineExceeded:
		return res, fmt.Errorf("timed out after %s", e.timeout())
	}
	if tail := lastLine(res.Stderr); tail != "" {
		err = fmt.Errorf("%w (stderr: %s)", err, tail)
	}
	// The command's own failure says enough; any other may be the API
	// server refusing the exec, which comes back as a failed upgrade of
	// the connection: ask what the server may do, to say what to fix.
	var exit utilexec.ExitError
	if !errors.As(err, &exit) {
		if denied := r.denied(ctx, p.Namespace); denied != "" {
			err = fmt.Errorf("%s (%w)", denied, err)
		}
	}
	return res, err
}

// ExecReview asks whether the caller may run commands in the pods of
// namespace ("" for every namespace).
func ExecReview(namespace string) *authorizationv1.SelfSubjectAccessReview {
	return &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "create", Resource: "pods", Subresource: "exec"}}}
}

// Denial is what a server without the right to run commands in pods is
// told to do.
const Denial = "the server may not run commands in pods (pods/exec): install it with `salvor install --exec-hooks` (Helm: execHooks.enabled=true), or remove the hooks"

// denied asks the API server whether the server may run commands in
// namespace at all, and if not says what to do.
func (r *Runner) denied(ctx context.Context, namespace string) string {
	return r.review(ctx, ExecReview(namespace), Denial)
}

// review asks the API server whether the server may do what a review
// describes: denial when it may not, "" when it may or cannot tell.
func (r *Runner) review(ctx context.Context, review *authorizationv1.SelfSubjectAccessReview, denial string) string {
	got, err := r.access.Create(context.WithoutCancel(ctx), review, metav1.CreateOptions{})
	if err != nil || got.Status.Allowed {
		return ""
	}
	return denial
}

func hasContainer(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	return false
}

func phaseName(p corev1.PodPhase) string {
	if p == "" {
		return "not started"
	}
	return string(p)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = "..." + s[len(s)-300:]
	}
	return s
}

// capped keeps the last outputLimit bytes written to it.
type capped struct{ b bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > outputLimit {
		p = p[len(p)-outputLimit:]
	}
	if over := c.b.Len() + len(p) - outputLimit; over > 0 {
		c.b.Next(over)
	}
	c.b.Write(p)
	return n, nil
}

func (c *capped) String() string { return c.b.String() }
