package sdk

import (
	"context"
	"runtime/debug"

	"google.golang.org/grpc"

	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

// serverOptions are what every plugin-side gRPC server needs: room for large
// items and the cross-cutting behaviour of every call, written once here
// rather than in each method.
func serverOptions() []grpc.ServerOption {
	return append(wire.ServerOptions(),
		grpc.ChainUnaryInterceptor(unaryInterceptor),
		grpc.ChainStreamInterceptor(streamInterceptor),
	)
}

// recovered turns a panic into an error carrying its text and stack.
func recovered(p any, err *error) {
	if p == nil {
		return
	}
	*err = wire.PanicToStatus(p, panicFrames())
}

// panicFrames is the stack of the panicking goroutine, minus the recovery
// machinery above the panic site.
func panicFrames() []wire.Frame {
	frames := wire.Callers(2)
	for i, f := range frames {
		if f.Function == "runtime.gopanic" {
			return frames[i+1:]
		}
	}
	// Keep the raw trace as a last resort: it still names the panic site.
	if len(frames) == 0 {
		return []wire.Frame{{Function: string(debug.Stack())}}
	}
	return frames
}

func unaryInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	ctx, cancel := wire.DeadlineFromHeader(ctx)
	defer cancel()
	defer func() { recovered(recover(), &err) }()
	resp, err = handler(ctx, req)
	if err != nil {
		return nil, wire.ToStatus(err)
	}
	return resp, nil
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }

func streamInterceptor(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	ctx, cancel := wire.DeadlineFromHeader(ss.Context())
	defer cancel()
	defer func() { recovered(recover(), &err) }()
	if err = handler(srv, ctxStream{ServerStream: ss, ctx: ctx}); err != nil {
		return wire.ToStatus(err)
	}
	return nil
}
