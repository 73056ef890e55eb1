package snapshotlocation

import (
	"testing"

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
