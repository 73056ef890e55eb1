package wire

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

func TestToStatus(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		code      codes.Code
		msg       string
		withStack bool
	}{
		{"plain", errors.New("boom"), codes.Unknown, "boom", false},
		{"with stack", WithStack(errors.New("boom")), codes.Unknown, "boom", true},
		{"wrapped stack", fmt.Errorf("outer: %w", WithStack(errors.New("inner"))), codes.Unknown, "outer: inner", true},
		{"deadline", fmt.Errorf("gave up: %w", context.DeadlineExceeded), codes.DeadlineExceeded, "gave up: context deadline exceeded", false},
		{"cancel", context.Canceled, codes.Canceled, "context canceled", false},
		{"status kept", status.Error(codes.NotFound, "no such plugin"), codes.NotFound, "no such plugin", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg, frames := FromStatus(ToStatus(tc.err))
			if code != tc.code || msg != tc.msg {
				t.Errorf("got %v %q, want %v %q", code, msg, tc.code, tc.msg)
			}
			if tc.withStack != (len(frames) > 0) {
				t.Errorf("stack frames %v, want some: %v", frames, tc.withStack)
			}
			if tc.withStack && !strings.HasSuffix(frames[0].Function, "wire.TestToStatus") {
				t.Errorf("top frame %+v is not the test", frames[0])
			}
		})
	}
	if ToStatus(nil) != nil {
		t.Error("ToStatus(nil) != nil")
	}
}

func TestPanicToStatus(t *testing.T) {
	code, msg, frames := FromStatus(PanicToStatus("oops", []Frame{{File: "f.go", Line: 3, Function: "main.f"}}))
	if code != codes.Aborted || msg != "plugin panicked: oops" || len(frames) != 1 || frames[0].Line != 3 {
		t.Errorf("got %v %q %v", code, msg, frames)
	}
}

func TestConversionsRoundTrip(t *testing.T) {
	ids := []api.ResourceIdentifier{
		{GroupResource: schema.GroupResource{Group: "apps", Resource: "deployments"}, Namespace: "ns", Name: "web"},
		{GroupResource: schema.GroupResource{Resource: "persistentvolumes"}, Name: "pv"},
	}
	if got := IDsFromProto(IDsToProto(ids)); fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("ids: %v", got)
	}
	if IDsToProto(nil) != nil || IDsFromProto(nil) != nil {
		t.Error("empty ids do not stay nil")
	}
	sel := api.ResourceSelector{IncludedNamespaces: []string{"a"}, ExcludedNamespaces: []string{"b"},
		IncludedResources: []string{"c"}, ExcludedResources: []string{"d"}, LabelSelector: "x=y"}
	if got := SelectorFromProto(SelectorToProto(sel)); fmt.Sprint(got) != fmt.Sprint(sel) {
		t.Errorf("selector: %+v", got)
	}
	p := api.OperationProgress{Completed: true, Err: "e", NCompleted: 1, NTotal: 2, OperationUnits: "u", Description: "d",
		Started: time.Unix(10, 5).UTC(), Updated: time.Unix(20, 0).UTC()}
	if got := ProgressFromProto(ProgressToProto(p)); got != p {
		t.Errorf("progress: %+v", got)
	}
	// Unset times stay unset rather than becoming 1970.
	if got := ProgressFromProto(ProgressToProto(api.OperationProgress{})); !got.Started.IsZero() || !got.Updated.IsZero() {
		t.Errorf("zero times: %+v", got)
	}
}
