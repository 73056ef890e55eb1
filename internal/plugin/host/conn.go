package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/salvor-dev/salvor/pkg/plugin/kind"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

// callInfo is what a typed client tells the connection about a call, for
// error messages: the plugin's name and the item the call is about.
type callInfo struct {
	plugin string
	item   string
}

type callInfoKey struct{}

func withCall(ctx context.Context, plugin, item string) context.Context {
	return context.WithValue(ctx, callInfoKey{}, callInfo{plugin: plugin, item: item})
}

// conn is the one restart layer: a grpc.ClientConnInterface under every
// generated client stub (see the package doc).
type conn struct {
	p *process
	// service, when set, is the service every call goes to instead of the
	// stub's: an older version of the kind, called through the newest
	// version's stub. Each newer message is the older one with fields added
	// under new numbers, so the older plugin reads the request and its answer
	// reads as the newer one with the added fields unset.
	service string
}

// route is the method path a call of the stub's method takes.
func (c conn) route(method string) string {
	if c.service == "" {
		return method
	}
	return "/" + c.service + method[strings.LastIndexByte(method, '/'):]
}

var _ grpc.ClientConnInterface = conn{}

// call is one plugin call in flight: its deadlines and how to end it.
type call struct {
	desc     kind.Descriptor
	method   string
	info     callInfo
	start    time.Time
	ctx      context.Context // carries the gRPC deadline: plugin deadline + grace
	cancel   context.CancelFunc
	stopWait func() bool
	gen      int

	// A stream has no deadline as a whole: its deadline bounds each wait
	// on the plugin (a send it does not take, an answer it does not give).
	// A wait past it cancels the stream alone: stalled says so.
	stream  bool
	idle    time.Duration
	stalled atomic.Bool
}

// begin prepares a call: the plugin's deadline is the caller's, or the
// kind's default for the method when that is sooner; the gRPC deadline is
// later by the grace period, so a plugin that honours its context answers
// in time, and one that doesn't is caught. Cancelling the caller's context
// cancels the call at once; the caller's deadline passing does not, so the
// plugin gets its grace period.
func (c conn) begin(ctx context.Context, fullMethod string) (*call, *grpc.ClientConn, error) {
	m := c.p.opts.method(fullMethod)
	info, _ := ctx.Value(callInfoKey{}).(callInfo)
	cl := &call{desc: m.desc, method: m.name, info: info, start: time.Now(), stopWait: noop}
	deadline := cl.start.Add(m.timeout)
	callerDeadline, hasDeadline := ctx.Deadline()
	if hasDeadline && callerDeadline.Before(deadline) {
		deadline = callerDeadline
	}
	if !hasDeadline || callerDeadline.After(deadline.Add(c.p.opts.Grace)) {
		// The caller's deadline (if any) is beyond ours: derive directly.
		cl.ctx, cl.cancel = context.WithDeadline(ctx, deadline.Add(c.p.opts.Grace))
	} else {
		// The caller's deadline would end the call before the grace period:
		// detach from it, keeping only its cancellation.
		base, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline.Add(c.p.opts.Grace))
		cl.ctx, cl.cancel = base, cancel
		cl.stopWait = context.AfterFunc(ctx, func() {
			if errors.Is(context.Cause(ctx), context.Canceled) {
				cancel()
			}
		})
	}
	cl.ctx = wire.WithTimeoutHeader(cl.ctx, time.Until(deadline))
	return c.connect(ctx, cl)
}

// connect gives a prepared call its process's connection, starting the
// process if need be.
func (c conn) connect(ctx context.Context, cl *call) (*call, *grpc.ClientConn, error) {
	cc, gen, err := c.p.get(ctx)
	if err != nil {
		cl.end()
		return nil, nil, cl.fail(c.p, ctx, err, false)
	}
	cl.gen = gen
	return cl, cc, nil
}

func noop() bool { return false }

// pastHardDeadline tells whether the call ran until deadline + grace. The
// plugin's gRPC server gives up at the same moment and may reset the stream
// a hair before the host's own timer fires, so the clock decides, not
// whichever error arrived first.
func (cl *call) pastHardDeadline() bool {
	d, _ := cl.ctx.Deadline()
	return errors.Is(cl.ctx.Err(), context.DeadlineExceeded) || !time.Now().Before(d.Add(-5*time.Millisecond))
}

func (cl *call) end() {
	cl.stopWait()
	cl.cancel()
}

// outcome classifies a call's result for metrics.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrPluginHung):
		return "hung"
	case errors.Is(err, ErrPluginCrashed):
		return "crashed"
	case errors.Is(err, ErrStalled):
		return "stalled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	default:
		return "error"
	}
}

func (c conn) observe(cl *call, err error) {
	if c.p.opts.OnCall != nil {
		c.p.opts.OnCall(cl.desc.Kind, cl.method, outcome(err), time.Since(cl.start))
	}
}

// fail turns a failed call into a *CallError, killing a hung process.
func (cl *call) fail(p *process, callerCtx context.Context, err error, started bool) error {
	ce := &CallError{
		Plugin:    cl.info.plugin,
		Kind:      cl.desc.Kind,
		Method:    cl.method,
		Item:      cl.info.item,
		Binary:    p.cmd.Path,
		inProcess: p.cmd.InProcess != nil,
		Waited:    time.Since(cl.start),
	}
	ce.Code, ce.Message, ce.Stack = wire.FromStatus(err)
	switch {
	case !started:
		ce.Message = err.Error()
		ce.cause = ErrPluginCrashed
		ce.notStarted = true
	case errors.Is(context.Cause(callerCtx), context.Canceled):
		ce.cause = context.Canceled
	case cl.stream && cl.stalled.Load():
		// The stream alone ends; the process and its other calls go on.
		ce.cause = ErrStalled
		ce.Message = fmt.Sprintf("no progress for %s", cl.idle)
	case cl.stream:
		ce.cause = causeOf(ce.Code)
		if ce.Code == codes.Unavailable || ce.Code == codes.Internal && strings.Contains(ce.Message, "EOF") {
			if dead, how := p.exited(cl.gen); dead {
				ce.cause, ce.Message, ce.Stderr = ErrPluginCrashed, how, p.stderr.last()
			}
		}
	case cl.pastHardDeadline():
		p.kill(cl.gen)
		ce.cause = ErrPluginHung
		msg := "plugin ignored its deadline; killed its process"
		if p.cmd.InProcess != nil {
			msg = "plugin ignored its deadline; stopped its in-process server"
		}
		p.log.Error(msg, "plugin", ce.Plugin, "method", ce.Method, "item", ce.Item, "waited", ce.Waited)
	case ce.Code == codes.Unavailable || ce.Code == codes.Internal && strings.Contains(ce.Message, "EOF"):
		if dead, how := p.exited(cl.gen); dead {
			ce.cause = ErrPluginCrashed
			ce.Message = how
			ce.Stderr = p.stderr.last()
		} else {
			ce.cause = causeOf(ce.Code)
		}
	default:
		ce.cause = causeOf(ce.Code)
	}
	return ce
}

// Invoke runs a unary call. A read-only call whose process died under it
// is sent once more to the restarted process: it may have died before the
// call (killed between calls) and the caller should not see that.
func (c conn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	method = c.route(method)
	err := c.invoke(ctx, method, args, reply, opts...)
	if errors.Is(err, ErrPluginCrashed) && c.p.opts.method(method).retryable && ctx.Err() == nil {
		c.p.log.Warn("plugin process died; sending the call again", "method", method, "error", err)
		err = c.invoke(ctx, method, args, reply, opts...)
	}
	return err
}

func (c conn) invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	cl, cc, err := c.begin(ctx, method)
	if err != nil {
		return err
	}
	defer cl.end()
	if err := cc.Invoke(cl.ctx, method, args, reply, opts...); err != nil {
		err = cl.fail(c.p, ctx, err, true)
		c.observe(cl, err)
		return err
	}
	c.observe(cl, nil)
	if cl.desc.Stateful && cl.method == "Init" {
		if m, ok := args.(proto.Message); ok {
			c.p.recordInit(method, cl.info.plugin, m)
		}
	}
	return nil
}

// beginStream prepares a stream: cancelled with the caller's context, and
// otherwise bounded by progress (see call.idle), never by its length — an
// upload of any size that keeps moving is never cut.
func (c conn) beginStream(ctx context.Context, fullMethod string) (*call, *grpc.ClientConn, error) {
	m := c.p.opts.method(fullMethod)
	info, _ := ctx.Value(callInfoKey{}).(callInfo)
	cl := &call{desc: m.desc, method: m.name, info: info, start: time.Now(), stopWait: noop, stream: true, idle: m.timeout}
	cl.ctx, cl.cancel = context.WithCancel(ctx)
	return c.connect(ctx, cl)
}

// wait runs one wait on the plugin under the stream's idle deadline.
func (cl *call) wait(f func() error) error {
	t := time.AfterFunc(cl.idle, func() {
		cl.stalled.Store(true)
		cl.cancel()
	})
	defer t.Stop()
	return f()
}

// NewStream opens a stream (ObjectStore PutObject and GetObject). Its
// deadline bounds each wait on the plugin, not the whole stream.
func (c conn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	method = c.route(method)
	cl, cc, err := c.beginStream(ctx, method)
	if err != nil {
		return nil, err
	}
	cs, err := cc.NewStream(cl.ctx, desc, method, opts...)
	if err != nil {
		defer cl.end()
		return nil, cl.fail(c.p, ctx, err, true)
	}
	return &stream{ClientStream: cs, c: c, cl: cl, caller: ctx, serverStreams: desc.ServerStreams}, nil
}

// stream ends its call when the stream ends, and reports failures like Invoke.
type stream struct {
	grpc.ClientStream
	c             conn
	cl            *call
	caller        context.Context
	serverStreams bool
	once          sync.Once
}

func (s *stream) finish() { s.finishWith(nil) }

func (s *stream) finishWith(err error) {
	s.once.Do(func() {
		s.cl.end()
		s.c.observe(s.cl, err)
	})
}

func (s *stream) SendMsg(m any) error {
	if err := s.cl.wait(func() error { return s.ClientStream.SendMsg(m) }); err != nil {
		if errors.Is(err, io.EOF) {
			// The server ended the stream; RecvMsg has the reason.
			return err
		}
		err = s.cl.fail(s.c.p, s.caller, err, true)
		s.finishWith(err)
		return err
	}
	return nil
}

func (s *stream) RecvMsg(m any) error {
	err := s.cl.wait(func() error { return s.ClientStream.RecvMsg(m) })
	switch {
	case err == nil:
		if !s.serverStreams {
			s.finish()
		}
		return nil
	case errors.Is(err, io.EOF):
		s.finish()
		return err
	default:
		err = s.cl.fail(s.c.p, s.caller, err, true)
		s.finishWith(err)
		return err
	}
}
