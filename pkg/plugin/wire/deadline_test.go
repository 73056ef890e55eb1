package wire

import (
	"context"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
)

func TestDeadlineFromHeader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		md     metadata.MD
		within time.Duration // 0: no deadline
	}{
		{"the host's deadline", metadata.Pairs(TimeoutHeader, strconv.FormatInt(int64(3*time.Second), 10)), 3 * time.Second},
		{"no header", metadata.Pairs("other", "1"), 0},
		{"no metadata", nil, 0},
		{"not a number", metadata.Pairs(TimeoutHeader, "soon"), 0},
		{"not positive", metadata.Pairs(TimeoutHeader, "0"), 0},
		{"sent twice", metadata.Pairs(TimeoutHeader, "5", TimeoutHeader, "6"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.md != nil {
				ctx = metadata.NewIncomingContext(ctx, tc.md)
			}
			start := time.Now()
			ctx, cancel := DeadlineFromHeader(ctx)
			deadline, ok := ctx.Deadline()
			if ok != (tc.within > 0) {
				t.Fatalf("deadline set: %v, want %v", ok, tc.within > 0)
			}
			if ok && (deadline.Before(start.Add(tc.within)) || deadline.After(time.Now().Add(tc.within))) {
				t.Errorf("deadline %s from the start, want %s", deadline.Sub(start), tc.within)
			}
			cancel()
			if ctx.Err() == nil {
				t.Error("cancel did not end the context")
			}
		})
	}
}

func TestIsSalvorHost(t *testing.T) {
	out := AsSalvorHost(context.Background())
	md, _ := metadata.FromOutgoingContext(out)
	if !IsSalvorHost(metadata.NewIncomingContext(context.Background(), md)) {
		t.Error("a call marked by AsSalvorHost is not seen as from a Salvor host")
	}
	if IsSalvorHost(metadata.NewIncomingContext(context.Background(), metadata.Pairs("user-agent", "velero"))) {
		t.Error("an unmarked call is seen as from a Salvor host")
	}
	if IsSalvorHost(context.Background()) {
		t.Error("a call without metadata is seen as from a Salvor host")
	}
}
