package wire

import (
	"context"
	"strconv"
	"time"

	"google.golang.org/grpc/metadata"
)

// TimeoutHeader carries the host's deadline for a call, in nanoseconds from
// when the call was sent. The gRPC deadline itself is later by the host's
// grace period: a plugin that honours its context returns inside the grace
// period with its own error, and one still running when the grace period is
// over is known to ignore its context and is restarted.
const TimeoutHeader = "salvor-timeout"

// WithTimeoutHeader adds the call's deadline to outgoing metadata.
func WithTimeoutHeader(ctx context.Context, d time.Duration) context.Context {
	return metadata.AppendToOutgoingContext(ctx, TimeoutHeader, strconv.FormatInt(int64(d), 10))
}

// DeadlineFromHeader applies the host's deadline, if the call carries one,
// to the plugin-side context.
func DeadlineFromHeader(ctx context.Context) (context.Context, context.CancelFunc) {
	// ValueFromIncomingContext reads the one key; FromIncomingContext would
	// copy every header of every call first.
	if v := metadata.ValueFromIncomingContext(ctx, TimeoutHeader); len(v) == 1 {
		if ns, err := strconv.ParseInt(v[0], 10, 64); err == nil && ns > 0 {
			return context.WithTimeout(ctx, time.Duration(ns))
		}
	}
	return context.WithCancel(ctx)
}

// HostHeader marks calls from a Salvor host, so that a plugin built with the
// SDK can tell it from a Velero host (which rejects kinds it does not know).
const HostHeader = "salvor-host"

// AsSalvorHost marks an outgoing call as coming from a Salvor host.
func AsSalvorHost(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, HostHeader, "1")
}

// IsSalvorHost tells whether an incoming call comes from a Salvor host.
func IsSalvorHost(ctx context.Context) bool {
	return len(metadata.ValueFromIncomingContext(ctx, HostHeader)) > 0
}
