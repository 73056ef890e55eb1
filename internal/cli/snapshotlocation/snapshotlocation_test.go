package snapshotlocation

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func TestUnknownProvider(t *testing.T) {
	plugins := []salvorv1.PluginInfo{
		{Name: "salvor.dev/local-volume", Kind: "VolumeSnapshotterV2"},
		{Name: "velero.io/aws", Kind: "VolumeSnapshotter"},
		{Name: "velero.io/aws", Kind: "VolumeSnapshotterV2"},
		{Name: "salvor.dev/s3", Kind: "ObjectStore"},
	}
	for provider, want := range map[string]string{
		"salvor.dev/local-volume": "",
		"aws":                     "",
		"velero.io/aws":           "",
		"salvor.dev/localvolume":  "the server runs no VolumeSnapshotter plugin named salvor.dev/localvolume (its VolumeSnapshotters: salvor.dev/local-volume, velero.io/aws): fix --provider, or add the plugin's image first (salvor plugin add IMAGE)",
		"salvor.dev/s3":           "the server runs no VolumeSnapshotter plugin named salvor.dev/s3 (its VolumeSnapshotters: salvor.dev/local-volume, velero.io/aws): fix --provider, or add the plugin's image first (salvor plugin add IMAGE)",
	} {
		if got := unknownProvider(provider, plugins); got != want {
			t.Errorf("%s:\n got %q\nwant %q", provider, got, want)
		}
	}
	if got := unknownProvider("gcp", nil); got != "the server runs no VolumeSnapshotter plugin named velero.io/gcp (its VolumeSnapshotters: none): fix --provider, or add the plugin's image first (salvor plugin add IMAGE)" {
		t.Errorf("no plugins: %q", got)
	}
}

// TestCreateFlagsMakeTheLocation: what `salvor snapshot-location create`'s
// flags make of a VolumeSnapshotLocation, and the mistakes refused before
// any cluster is asked.
func TestCreateFlagsMakeTheLocation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    *salvorv1.VolumeSnapshotLocation
		wantErr string
	}{
		{name: "a default local location", args: []string{"--provider", "salvor.dev/local-volume", "--config", "snapshotDir=/var/snap", "--default"},
			want: &salvorv1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: "salvor"},
				Spec: salvorv1.VolumeSnapshotLocationSpec{Provider: "salvor.dev/local-volume", Config: map[string]string{"snapshotDir": "/var/snap"}, Default: true}}},
		{name: "Velero's credential and labels", args: []string{"--provider", "aws", "--credential", "cloud=key", "--labels", "team=a", "--config", "region=eu-west-1,profile=p"},
			want: &salvorv1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: "salvor", Labels: map[string]string{"team": "a"}},
				Spec: salvorv1.VolumeSnapshotLocationSpec{Provider: "aws", Config: map[string]string{"region": "eu-west-1", "profile": "p"},
					Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cloud"}, Key: "key"}}}},
		{name: "no provider", args: []string{"--default"}, wantErr: "--provider is required"},
		{name: "two credentials", args: []string{"--provider", "aws", "--credential", "a=k,b=k"}, wantErr: "--credential: give one SECRET=KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &createOptions{}
			f := pflag.NewFlagSet("create", pflag.ContinueOnError)
			o.bind(f)
			if err := f.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := o.location("salvor", "local")
			if refused(t, err, tc.wantErr) {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("made\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// TestSetChangesOnlyWhatItsFlagsSay: `salvor snapshot-location set`'s new
// spec is the old one with its flags applied and nothing else; mistakes are
// refused before the location is read, and the location read is not
// changed in place.
func TestSetChangesOnlyWhatItsFlagsSay(t *testing.T) {
	current := &salvorv1.VolumeSnapshotLocation{
		ObjectMeta: metav1.ObjectMeta{Name: "local"},
		Spec: salvorv1.VolumeSnapshotLocationSpec{Provider: "salvor.dev/local-volume", Default: true,
			Config: map[string]string{"snapshotDir": "/var/snap", "bytesPerSecond": "100"}},
	}
	for _, tc := range []struct {
		args    []string
		wantErr string
		want    salvorv1.VolumeSnapshotLocationSpec
	}{
		{args: nil, wantErr: "nothing to change: give --default, --config, --unset-config or --credential"},
		{args: []string{"--credential", "a=b,c=d"}, wantErr: "--credential: give one SECRET=KEY"},
		{args: []string{"--config", "bytesPerSecond=50", "--unset-config", "snapshotDir"},
			want: salvorv1.VolumeSnapshotLocationSpec{Provider: "salvor.dev/local-volume", Default: true, Config: map[string]string{"bytesPerSecond": "50"}}},
		{args: []string{"--default=false", "--credential", "cloud=key"},
			want: salvorv1.VolumeSnapshotLocationSpec{Provider: "salvor.dev/local-volume", Config: map[string]string{"snapshotDir": "/var/snap", "bytesPerSecond": "100"},
				Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cloud"}, Key: "key"}}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o := &setOptions{}
			f := pflag.NewFlagSet("set", pflag.ContinueOnError)
			o.bind(f)
			if err := f.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			before := current.DeepCopy()
			if refused(t, o.complete(f), tc.wantErr) {
				return
			}
			if got := o.change(current); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("spec\n%+v\nwant\n%+v", got, tc.want)
			}
			if !reflect.DeepEqual(current, before) {
				t.Errorf("the location read was changed in place: %+v", current)
			}
		})
	}
}

// refused checks err against the error a case wants (want, a part of its
// message; "" for none), failing the test when they differ, and says
// whether the case was to be refused: then there is nothing more to check.
func refused(t *testing.T, err error, want string) bool {
	t.Helper()
	switch {
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("error %v, want one saying %q", err, want)
	case want == "" && err != nil:
		t.Fatal(err)
	}
	return want != ""
}
