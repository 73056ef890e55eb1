package controller

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestSnapshotLocationCredential: a VolumeSnapshotLocation naming a
// credential (Velero's spec.credential) gives its plugin the Secret's key
// as a file only the server reads, under credentialsFile; a missing key is
// an error naming it; the location's own config is never changed.
func TestSnapshotLocationCredential(t *testing.T) {
	c, server := testbed.SharedServerNamespace(t)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "snap-creds", Namespace: server},
		Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id = AKIA\n")}}); err != nil {
		t.Fatal(err)
	}
	l := &Locations{Client: c, Secrets: c, Namespace: server, CredentialsDir: t.TempDir()}
	vsl := &salvorv1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Name: "ebs", Namespace: server},
		Spec: salvorv1.VolumeSnapshotLocationSpec{Provider: "velero.io/aws", Config: map[string]string{"region": "eu-west-1"},
			Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "snap-creds"}, Key: "cloud"}}}
	config, err := l.snapshotConfig(ctx, vsl)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(config["credentialsFile"])
	if err != nil || string(data) != "[default]\naws_access_key_id = AKIA\n" || config["region"] != "eu-west-1" {
		t.Errorf("config %v: credentials file %q (%v)", config, data, err)
	}
	if info, err := os.Stat(config["credentialsFile"]); err != nil || info.Mode().Perm()&0o077 != 0 {
		t.Errorf("the credentials file is readable by others: %v %v", info.Mode(), err)
	}
	if _, changed := vsl.Spec.Config["credentialsFile"]; changed {
		t.Error("the location's own config was changed")
	}
	vsl.Spec.Credential.Key = "nope"
	if _, err := l.snapshotConfig(ctx, vsl); err == nil || !strings.Contains(err.Error(), `credential secret `+server+`/snap-creds has no key "nope"`) {
		t.Errorf("a missing key: %v", err)
	}
	vsl.Spec.Credential, vsl.Spec.Config = nil, nil
	if config, err := l.snapshotConfig(ctx, vsl); err != nil || len(config) != 0 {
		t.Errorf("no credential: %v %v", config, err)
	}
}
