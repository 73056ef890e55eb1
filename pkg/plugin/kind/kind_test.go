package kind

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	biav2 "github.com/salvor-dev/salvor/pkg/plugin/proto/backupitemaction/v2"
	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
	riav2 "github.com/salvor-dev/salvor/pkg/plugin/proto/restoreitemaction/v2"
	vsv2 "github.com/salvor-dev/salvor/pkg/plugin/proto/volumesnapshotter/v2"
)

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wantErr string
	}{
		{name: "example.io/my-action"},
		{name: "velero.io/aws"},
		{name: "salvor.dev/local-volume"},
		{name: "noslash", wantErr: "of the form"},
		{name: "a/b/c", wantErr: "of the form"},
		{name: "Example.IO/x", wantErr: "DNS-1123"},
		{name: "example.io/", wantErr: "after the slash"},
		{name: "example.io/-x", wantErr: "after the slash"},
	} {
		err := ValidateName(tc.name)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("ValidateName(%q) = %v, want nil", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("ValidateName(%q) = %v, want error containing %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestForMethod(t *testing.T) {
	for _, tc := range []struct {
		path   string
		kind   Kind
		method string
	}{
		{"/v2.BackupItemAction/Execute", BackupItemActionV2, "Execute"},
		{"/generated.BackupItemAction/AppliesTo", BackupItemAction, "AppliesTo"},
		{"/v2.VolumeSnapshotter/Progress", VolumeSnapshotterV2, "Progress"},
		{"/generated.ObjectStore/PutObject", ObjectStore, "PutObject"},
	} {
		d, m, ok := ForMethod(tc.path)
		if !ok || d.Kind != tc.kind || m != tc.method {
			t.Errorf("ForMethod(%q) = %v %q %v, want %v %q", tc.path, d.Kind, m, ok, tc.kind, tc.method)
		}
	}
	if _, _, ok := ForMethod("/nope.X/Y"); ok {
		t.Error("ForMethod of an unknown service succeeded")
	}
}

func TestEveryOlderKindIsOfferedAsAKnownKind(t *testing.T) {
	for _, d := range All() {
		if d.OfferedAs == "" {
			continue
		}
		newer, ok := Lookup(d.OfferedAs)
		if !ok {
			t.Errorf("%s is offered as unknown kind %s", d.Kind, d.OfferedAs)
			continue
		}
		for m := range d.Methods {
			if _, ok := newer.Methods[m]; !ok {
				t.Errorf("%s.%s has no counterpart in %s", d.Kind, m, newer.Kind)
			}
		}
	}
}

// TestEveryMethodIsInTheTable: each kind's table row names every method of
// its gRPC service and nothing else, so a method added to a proto cannot go
// without its deadline and its read-only fact.
func TestEveryMethodIsInTheTable(t *testing.T) {
	services := []grpc.ServiceDesc{
		pb.PluginLister_ServiceDesc, pb.ObjectStore_ServiceDesc, pb.VolumeSnapshotter_ServiceDesc,
		vsv2.VolumeSnapshotter_ServiceDesc, pb.BackupItemAction_ServiceDesc, biav2.BackupItemAction_ServiceDesc,
		pb.RestoreItemAction_ServiceDesc, riav2.RestoreItemAction_ServiceDesc, pb.DeleteItemAction_ServiceDesc,
	}
	if len(services) != len(All()) {
		t.Fatalf("%d services for %d kinds", len(services), len(All()))
	}
	for _, svc := range services {
		d, _, ok := ForMethod("/" + svc.ServiceName + "/")
		if !ok {
			t.Errorf("no kind serves %s", svc.ServiceName)
			continue
		}
		var names []string
		for _, m := range svc.Methods {
			names = append(names, m.MethodName)
		}
		for _, st := range svc.Streams {
			names = append(names, st.StreamName)
		}
		for _, n := range names {
			if m, ok := d.Methods[n]; !ok || m.Timeout <= 0 {
				t.Errorf("%s.%s has no deadline in the table", d.Kind, n)
			}
		}
		if len(names) != len(d.Methods) {
			t.Errorf("%s: the table has %d methods, the service %d (%v)", d.Kind, len(d.Methods), len(names), names)
		}
	}
}

func TestReadOnly(t *testing.T) {
	for _, tc := range []struct {
		kind   Kind
		method string
		want   bool
	}{
		{BackupItemActionV2, "AppliesTo", true},
		{BackupItemActionV2, "Execute", false},
		{BackupItemActionV2, "Progress", true},
		{BackupItemActionV2, "Cancel", false},
		{ObjectStore, "GetObject", true},
		{ObjectStore, "PutObject", false},
		{ObjectStore, "DeleteObject", false},
		{VolumeSnapshotter, "Init", true},
		{VolumeSnapshotterV2, "CreateSnapshot", false},
		{RestoreItemActionV2, "AreAdditionalItemsReady", true},
		{DeleteItemAction, "NoSuchMethod", false},
	} {
		d, _ := Lookup(tc.kind)
		if got := d.Retryable(tc.method); got != tc.want {
			t.Errorf("%s.%s retryable = %v, want %v", tc.kind, tc.method, got, tc.want)
		}
	}
}

// TestDocsListTheTable: docs/concepts.md lists each kind's methods with the
// deadlines and read-only facts of this table, row for row.
func TestDocsListTheTable(t *testing.T) {
	b, err := os.ReadFile("../../../docs/concepts.md")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range All() {
		names := slices.Sorted(maps.Keys(d.Methods))
		var cells []string
		for _, n := range names {
			m := d.Methods[n]
			cell := n + " " + short(m.Timeout)
			if m.ReadOnly {
				cell += " ↻"
			}
			cells = append(cells, cell)
		}
		want = append(want, fmt.Sprintf("| %s | %s |", d.Kind, strings.Join(cells, ", ")))
	}
	if !strings.Contains(string(b), strings.Join(want, "\n")) {
		t.Errorf("docs/concepts.md does not list the kind table; its rows should read:\n%s", strings.Join(want, "\n"))
	}
}

// short writes 30s, 5m, 1h rather than Go's 5m0s.
func short(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	default:
		return d.String()
	}
}
