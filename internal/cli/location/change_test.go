package location

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestWithFiles: only backups that ran hold a location; one that never
// started does not.
func TestWithFiles(t *testing.T) {
	now := metav1.Now()
	b := func(name string, st salvorv1.BackupStatus) salvorv1.Backup {
		return salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: st}
	}
	got := withFiles([]salvorv1.Backup{
		b("new", salvorv1.BackupStatus{}),
		b("invalid", salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseFailedValidation}),
		b("never-started", salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseFailed}),
		b("failed-running", salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseFailed, StartTimestamp: &now}),
		b("done", salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseCompleted}),
		b("running", salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseInProgress}),
	})
	var names []string
	for _, g := range got {
		names = append(names, g.Name)
	}
	if want := "[failed-running done running]"; fmt.Sprint(names) != want {
		t.Errorf("withFiles = %v, want %s", names, want)
	}
}

// TestSetChangesOnlyWhatItsFlagsSay: `backup-location set` judges its
// flags before reading the location, and the new spec keeps every field
// and config key the flags do not name.
func TestSetChangesOnlyWhatItsFlagsSay(t *testing.T) {
	current := &salvorv1.BackupStorageLocation{
		ObjectMeta: metav1.ObjectMeta{Name: "s3"},
		Spec: salvorv1.BackupStorageLocationSpec{
			Provider: "salvor.dev/s3", Default: true,
			Config:        map[string]string{"region": "eu-west-1", "s3Url": "https://old", "profile": "p"},
			ObjectStorage: salvorv1.ObjectStorageLocation{Bucket: "b", Prefix: "p"},
			Tenants:       &salvorv1.LocationTenants{ShareBackups: true},
		},
	}
	files := map[string][]byte{"ca.pem": []byte("PEM")}
	readFile := func(name string) ([]byte, error) {
		if b, ok := files[name]; ok {
			return b, nil
		}
		return nil, fmt.Errorf("open %s: no such file or directory", name)
	}
	for _, tc := range []struct {
		args    []string
		wantErr string
		check   func(t *testing.T, spec salvorv1.BackupStorageLocationSpec)
	}{
		{args: nil, wantErr: "nothing to change: give --default"},
		{args: []string{"--access-mode", "Sometimes"}, wantErr: `--access-mode "Sometimes": want ReadWrite or ReadOnly`},
		{args: []string{"--cacert", "missing.pem"}, wantErr: "--cacert: open missing.pem"},
		{args: []string{"--credential", "a=b,c=d"}, wantErr: "--credential: give one SECRET=KEY"},
		{args: []string{"--no-tenants", "--share-backups"}, wantErr: "backup storage location s3: --no-tenants closes the location to tenants"},
		{args: []string{"--config", "s3Url=https://new", "--unset-config", "profile"}, check: func(t *testing.T, spec salvorv1.BackupStorageLocationSpec) {
			if want := map[string]string{"region": "eu-west-1", "s3Url": "https://new"}; fmt.Sprint(spec.Config) != fmt.Sprint(want) {
				t.Errorf("config %v, want %v", spec.Config, want)
			}
			if !spec.Default || spec.Tenants == nil || spec.AccessMode != "" || spec.Credential != nil {
				t.Errorf("fields the flags do not name changed: %+v", spec)
			}
		}},
		{args: []string{"--default=false", "--access-mode", "ReadOnly", "--credential", "creds=cloud", "--cacert", "ca.pem", "--no-tenants"},
			check: func(t *testing.T, spec salvorv1.BackupStorageLocationSpec) {
				if spec.Default || spec.AccessMode != salvorv1.BackupStorageLocationAccessModeReadOnly || spec.Tenants != nil ||
					spec.Credential == nil || spec.Credential.Name != "creds" || spec.Credential.Key != "cloud" || string(spec.ObjectStorage.CACert) != "PEM" {
					t.Errorf("spec %+v", spec)
				}
				if spec.Provider != "salvor.dev/s3" || spec.ObjectStorage.Bucket != "b" || spec.ObjectStorage.Prefix != "p" || len(spec.Config) != 3 {
					t.Errorf("where the location is changed: %+v", spec)
				}
			}},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			o := &setOptions{}
			f := pflag.NewFlagSet("set", pflag.ContinueOnError)
			o.bind(f)
			if err := f.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			before := current.DeepCopy()
			err := o.complete(f, readFile)
			var spec salvorv1.BackupStorageLocationSpec
			if err == nil {
				spec, err = o.change(current)
			}
			if !reflect.DeepEqual(current, before) {
				t.Errorf("the location read was changed in place: %+v", current)
			}
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			default:
				tc.check(t, spec)
			}
		})
	}
}
