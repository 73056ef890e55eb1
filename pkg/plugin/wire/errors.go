package wire

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
)

// Frame is one line of a stack trace.
type Frame struct {
	File     string
	Line     int
	Function string
}

func (f Frame) String() string { return fmt.Sprintf("%s\n\t%s:%d", f.Function, f.File, f.Line) }

// Stacker is implemented by errors that know where they were made.
type Stacker interface {
	StackFrames() []Frame
}

type stackError struct {
	err    error
	frames []Frame
}

func (e *stackError) Error() string        { return e.err.Error() }
func (e *stackError) Unwrap() error        { return e.err }
func (e *stackError) StackFrames() []Frame { return e.frames }

// WithStack records the caller's stack on err so it reaches the host as a
// Stack detail. It returns nil for nil, and err itself if it already has one.
func WithStack(err error) error { return WithStackSkip(err, 1) }

// WithStackSkip is WithStack for helpers: the stack starts skip frames above
// WithStackSkip's caller.
func WithStackSkip(err error, skip int) error {
	if err == nil {
		return nil
	}
	var s Stacker
	if errors.As(err, &s) {
		return err
	}
	return &stackError{err: err, frames: Callers(skip + 1)}
}

// Callers returns the stack from the caller of Callers (skip 0) or skip
// frames above it.
func Callers(skip int) []Frame {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(skip+2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var out []Frame
	for {
		f, more := frames.Next()
		if f.Function != "runtime.goexit" {
			out = append(out, Frame{File: f.File, Line: f.Line, Function: f.Function})
		}
		if !more {
			return out
		}
	}
}

// codeOf picks the status code of a plugin's error: context errors keep their
// meaning across the process boundary, anything else is Unknown.
func codeOf(err error) codes.Code {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	default:
		return codes.Unknown
	}
}

// ToStatus turns a plugin's error into the gRPC status error the host reads:
// its message intact, its stack (if known) as a Stack detail.
func ToStatus(err error) error {
	return toStatus(err, codeOf(err))
}

// PanicToStatus turns a recovered panic into an Aborted status carrying the
// panic's text and the stack where it happened.
func PanicToStatus(p any, frames []Frame) error {
	return toStatus(&stackError{err: fmt.Errorf("plugin panicked: %v", p), frames: frames}, codes.Aborted)
}

func toStatus(err error, code codes.Code) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		var st interface{ GRPCStatus() *status.Status }
		if errors.As(err, &st) && st.GRPCStatus().Code() != codes.Unknown {
			return err
		}
	}
	st := status.New(code, err.Error())
	var s Stacker
	if errors.As(err, &s) {
		stack := &pb.Stack{}
		for _, f := range s.StackFrames() {
			stack.Frames = append(stack.Frames, &pb.StackFrame{File: f.File, Line: int32(f.Line), Function: f.Function})
		}
		if withDetail, derr := st.WithDetails(stack); derr == nil {
			st = withDetail
		}
	}
	return st.Err()
}

// FromStatus reads a status error: its code, message and the plugin's stack,
// if one was sent.
func FromStatus(err error) (codes.Code, string, []Frame) {
	st, ok := status.FromError(err)
	if !ok {
		return codes.Unknown, err.Error(), nil
	}
	var frames []Frame
	for _, d := range st.Details() {
		if stack, ok := d.(*pb.Stack); ok {
			for _, f := range stack.GetFrames() {
				frames = append(frames, Frame{File: f.GetFile(), Line: int(f.GetLine()), Function: f.GetFunction()})
			}
		}
	}
	return st.Code(), st.Message(), frames
}
