package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/salvor-dev/salvor/pkg/plugin/kind"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

var (
	// ErrPluginNotFound: no discovered binary serves the plugin asked for.
	ErrPluginNotFound = errors.New("salvor: plugin not found")
	// ErrPluginHung: the plugin was still running a call at its deadline plus
	// the grace period; its process was killed and will be restarted.
	ErrPluginHung = errors.New("salvor: plugin ignored its deadline")
	// ErrStalled: a stream (an upload or download) made no progress within
	// its deadline; the stream was cancelled, the process left running.
	ErrStalled = errors.New("salvor: plugin stream stalled")
	// ErrPluginCrashed: the plugin's process died during the call.
	ErrPluginCrashed = errors.New("salvor: plugin process died")
	// ErrNotSupported: a v1 plugin was asked for a v2-only feature.
	ErrNotSupported = errors.New("salvor: plugin does not support asynchronous operations")
)

// CallError is how every failed plugin call is reported.
type CallError struct {
	Plugin string
	Kind   kind.Kind
	Method string
	// Item names what the call was about ("configmaps app/cfg",
	// "operation 1234"), when there was such a thing.
	Item   string
	Binary string
	Waited time.Duration
	// Code is the gRPC code; Message the plugin's own error text.
	Code    codes.Code
	Message string
	// Stack is the plugin's stack trace, when it sent one.
	Stack []wire.Frame
	// Stderr holds the last lines the process wrote before it died.
	Stderr []string
	cause  error
	// notStarted is set when the process could not be started at all.
	notStarted bool
	// inProcess is set when the plugin is served from the host's own
	// process (plugintest), which is stopped rather than killed.
	inProcess bool
}

func (e *CallError) Error() string {
	var b strings.Builder
	if e.Plugin != "" {
		fmt.Fprintf(&b, "plugin %s (%s) %s", e.Plugin, e.Kind, e.Method)
	} else {
		fmt.Fprintf(&b, "plugin binary %s: %s", e.Binary, e.Method)
	}
	if e.Item != "" {
		fmt.Fprintf(&b, " for %s", e.Item)
	}
	switch {
	case errors.Is(e.cause, ErrPluginHung) && e.inProcess:
		fmt.Fprintf(&b, ": no answer after %s (deadline plus grace period); the plugin ignored its context, so its in-process server %s was stopped and a new one will serve the next call",
			e.Waited.Round(time.Millisecond), e.Binary)
	case errors.Is(e.cause, ErrPluginHung):
		fmt.Fprintf(&b, ": no answer after %s (deadline plus grace period); the plugin ignored its context, so its process %s was killed and will be restarted",
			e.Waited.Round(time.Millisecond), e.Binary)
	case e.notStarted:
		fmt.Fprintf(&b, ": the plugin process could not be started: %s", e.Message)
	case errors.Is(e.cause, ErrPluginCrashed):
		fmt.Fprintf(&b, ": the plugin process %s died after %s: %s", e.Binary, e.Waited.Round(time.Millisecond), e.Message)
		if len(e.Stderr) > 0 {
			fmt.Fprintf(&b, "; its last output was:\n%s", strings.Join(e.Stderr, "\n"))
		}
	case e.Code == codes.DeadlineExceeded:
		fmt.Fprintf(&b, ": deadline exceeded after %s: %s", e.Waited.Round(time.Millisecond), e.Message)
	default:
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	return b.String()
}

// Unwrap lets errors.Is see the cause: ErrPluginHung, ErrPluginCrashed,
// ErrNotSupported, context.DeadlineExceeded or context.Canceled.
func (e *CallError) Unwrap() error { return e.cause }

// StackTrace formats the plugin's stack, one frame per two lines.
func (e *CallError) StackTrace() string {
	var b strings.Builder
	for _, f := range e.Stack {
		b.WriteString(f.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func causeOf(code codes.Code) error {
	switch code {
	case codes.DeadlineExceeded:
		return context.DeadlineExceeded
	case codes.Canceled:
		return context.Canceled
	case codes.Unimplemented:
		return ErrNotSupported
	}
	return nil
}
