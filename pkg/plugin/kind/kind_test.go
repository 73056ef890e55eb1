package kind

import (
	"strings"
	"testing"
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
		for m := range d.Timeouts {
			if _, ok := newer.Timeouts[m]; !ok {
				t.Errorf("%s.%s has no counterpart in %s", d.Kind, m, newer.Kind)
			}
		}
	}
}
