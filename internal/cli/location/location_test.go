package location

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestNestedLocation: a location whose path holds another's, or lies in
// it, on the same store and bucket, is refused naming the other; beside
// it, at the same path, or elsewhere it is not.
func TestNestedLocation(t *testing.T) {
	loc := func(name, bucket, prefix, url string) salvorv1.BackupStorageLocation {
		return salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: salvorv1.BackupStorageLocationSpec{
			Provider: "salvor.dev/s3", Config: map[string]string{"s3Url": url}, ObjectStorage: salvorv1.ObjectStorageLocation{Bucket: bucket, Prefix: prefix}}}
	}
	others := []salvorv1.BackupStorageLocation{loc("root", "shared", "", "http://minio"), loc("team", "teams", "a", "http://minio")}
	for _, tc := range []struct {
		bucket, prefix, url string
		want                string
	}{
		{"shared", "sealed", "http://minio", "location root uses the root of bucket shared, and prefix \"sealed\" of bucket shared lies inside it"},
		{"shared", "", "http://minio", ""},             // the same path
		{"shared", "sealed", "http://other-store", ""}, // another store
		{"other", "sealed", "http://minio", ""},
		{"teams", "", "http://minio", "location team uses prefix \"a\" of bucket teams, which lies inside the root of bucket teams"},
		{"teams", "a/b", "http://minio", "location team uses prefix \"a\" of bucket teams, and prefix \"a/b\""},
		{"teams", "ab", "http://minio", ""}, // beside, not inside
		{"teams", "b", "http://minio", ""},
	} {
		l := loc("new", tc.bucket, tc.prefix, tc.url)
		got := nestedLocation(&l, others)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s/%s at %s: %q, want %q", tc.bucket, tc.prefix, tc.url, got, tc.want)
		}
	}
}

// TestCreateFlagsMakeTheLocation: what `salvor backup-location create`'s
// flags make of a BackupStorageLocation, and the mistakes refused before
// any cluster is asked.
func TestCreateFlagsMakeTheLocation(t *testing.T) {
	base := func(edit func(*salvorv1.BackupStorageLocation)) *salvorv1.BackupStorageLocation {
		bsl := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: "salvor"},
			Spec: salvorv1.BackupStorageLocationSpec{Provider: "salvor.dev/s3", ObjectStorage: salvorv1.ObjectStorageLocation{Bucket: "backups"},
				AccessMode: salvorv1.BackupStorageLocationAccessModeReadWrite}}
		if edit != nil {
			edit(bsl)
		}
		return bsl
	}
	s3 := []string{"--provider", "salvor.dev/s3", "--bucket", "backups"}
	for _, tc := range []struct {
		name    string
		args    []string
		want    *salvorv1.BackupStorageLocation
		wantErr string
	}{
		{name: "the least", args: s3, want: base(nil)},
		{name: "a read-only default under a prefix, Velero's flags", args: append(s3, "--prefix", "cluster-a", "--access-mode", "ReadOnly", "--default",
			"--credential", "cloud=key", "--labels", "team=a", "--config", "region=eu-west-1"),
			want: base(func(b *salvorv1.BackupStorageLocation) {
				b.Labels = map[string]string{"team": "a"}
				b.Spec.ObjectStorage.Prefix, b.Spec.AccessMode, b.Spec.Default = "cluster-a", salvorv1.BackupStorageLocationAccessModeReadOnly, true
				b.Spec.Config = map[string]string{"region": "eu-west-1"}
				b.Spec.Credential = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cloud"}, Key: "key"}
			})},
		{name: "locked and encrypted", args: append(s3, "--immutable-for", "720h", "--immutable-mode", "COMPLIANCE", "--encryption-key-secret", "backup-keys"),
			want: base(func(b *salvorv1.BackupStorageLocation) {
				b.Spec.Immutability = &salvorv1.LocationImmutability{RetainFor: metav1.Duration{Duration: 720 * time.Hour}, Mode: "COMPLIANCE"}
				b.Spec.Encryption = &salvorv1.LocationEncryption{KeySecret: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "backup-keys"}, Key: "keys"}}
			})},
		{name: "a sync period of 0 given is kept; an unset one is not", args: append(s3, "--backup-sync-period", "0"),
			want: base(func(b *salvorv1.BackupStorageLocation) { b.Spec.BackupSyncPeriod = &metav1.Duration{} })},
		{name: "open to the namespaces labelled as tenants, sharing its backups", args: append(s3, "--tenant-selector", "salvor.dev/tenant", "--share-backups"),
			want: base(func(b *salvorv1.BackupStorageLocation) {
				b.Spec.Tenants = &salvorv1.LocationTenants{ShareBackups: true, NamespaceSelector: &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "salvor.dev/tenant", Operator: metav1.LabelSelectorOpExists}}}}
			})},
		{name: "open to every namespace", args: append(s3, "--tenant-selector", ""),
			want: base(func(b *salvorv1.BackupStorageLocation) {
				b.Spec.Tenants = &salvorv1.LocationTenants{NamespaceSelector: &metav1.LabelSelector{}}
			})},
		{name: "a tenant selector that does not parse", args: append(s3, "--tenant-selector", "team in a"), wantErr: `--tenant-selector "team in a"`},
		{name: "backups shared with no tenants", args: append(s3, "--share-backups"), wantErr: "--share-backups shares the location's backups with its tenants: give --tenant-selector too"},
		{name: "no bucket", args: []string{"--provider", "salvor.dev/s3"}, wantErr: "--provider and --bucket are required"},
		{name: "a mode Salvor has not", args: append(s3, "--access-mode", "WriteOnly"), wantErr: `--access-mode "WriteOnly": want ReadWrite or ReadOnly`},
		{name: "a lock mode with no lock", args: append(s3, "--immutable-mode", "GOVERNANCE"), wantErr: "--immutable-mode needs it"},
		{name: "a lock mode S3 has not", args: append(s3, "--immutable-for", "1h", "--immutable-mode", "FOREVER"), wantErr: `--immutable-mode "FOREVER"`},
		{name: "a negative check period", args: append(s3, "--validation-frequency", "-1m"), wantErr: "--validation-frequency -1m0s: must not be negative"},
		{name: "a key name with two slashes", args: append(s3, "--encryption-key-secret", "a/b/c"), wantErr: "want NAME or NAME/KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &createOptions{}
			f := pflag.NewFlagSet("create", pflag.ContinueOnError)
			o.bind(f)
			if err := f.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := o.location("salvor", "s3")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("made\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// TestSetTenantFlags: what `salvor backup-location set`'s tenant flags make
// of a location's spec.tenants as it is, and the mixes refused.
func TestSetTenantFlags(t *testing.T) {
	teams := &salvorv1.LocationTenants{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "team"}}}
	shared := teams.DeepCopy()
	shared.ShareBackups = true
	for _, tc := range []struct {
		name    string
		current *salvorv1.LocationTenants
		args    []string
		want    *salvorv1.LocationTenants
		wantErr string
	}{
		{name: "opened", args: []string{"--tenant-selector", "tier=team"}, want: teams},
		{name: "sharing turned on, the selector kept", current: teams, args: []string{"--share-backups"}, want: shared},
		{name: "the selector changed, sharing kept", current: shared, args: []string{"--tenant-selector", "tier=gold"},
			want: &salvorv1.LocationTenants{ShareBackups: true, NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}}},
		{name: "sharing turned off", current: shared, args: []string{"--share-backups=false"}, want: teams},
		{name: "closed", current: shared, args: []string{"--no-tenants"}, want: nil},
		{name: "closed and opened at once", current: shared, args: []string{"--no-tenants", "--tenant-selector", "tier=team"}, wantErr: "give it without --tenant-selector, --share-backups and the --tenant-max flags"},
		{name: "closed with a quota", current: shared, args: []string{"--no-tenants", "--tenant-max-backups", "3"}, wantErr: "give it without"},
		{name: "sharing on a location with no tenants", args: []string{"--share-backups"}, wantErr: "give --tenant-selector too"},
		{name: "a quota set, the rest kept", current: shared, args: []string{"--tenant-max-concurrent-jobs", "2", "--tenant-max-backups", "10"},
			want: &salvorv1.LocationTenants{ShareBackups: true, NamespaceSelector: teams.NamespaceSelector, Quota: &salvorv1.TenantQuota{MaxConcurrentJobs: 2, MaxBackups: 10}}},
		{name: "one bound of a quota changed", current: &salvorv1.LocationTenants{NamespaceSelector: teams.NamespaceSelector, Quota: &salvorv1.TenantQuota{MaxConcurrentJobs: 2, MaxBackups: 10}},
			args: []string{"--tenant-max-backups", "20"},
			want: &salvorv1.LocationTenants{NamespaceSelector: teams.NamespaceSelector, Quota: &salvorv1.TenantQuota{MaxConcurrentJobs: 2, MaxBackups: 20}}},
		{name: "a quota back to the defaults is none", current: &salvorv1.LocationTenants{NamespaceSelector: teams.NamespaceSelector, Quota: &salvorv1.TenantQuota{MaxBackups: 10}},
			args: []string{"--tenant-max-backups", "0"}, want: teams},
		{name: "a quota of bytes", current: teams, args: []string{"--tenant-max-bytes", "50Gi"},
			want: &salvorv1.LocationTenants{NamespaceSelector: teams.NamespaceSelector, Quota: &salvorv1.TenantQuota{MaxBytes: ptrTo(resource.MustParse("50Gi"))}}},
		{name: "a quota of bytes lifted", current: &salvorv1.LocationTenants{NamespaceSelector: teams.NamespaceSelector, Quota: &salvorv1.TenantQuota{MaxBytes: ptrTo(resource.MustParse("50Gi"))}},
			args: []string{"--tenant-max-bytes", "0"}, want: teams},
		{name: "a quota of bytes that is no size", current: teams, args: []string{"--tenant-max-bytes", "lots"}, wantErr: `--tenant-max-bytes "lots": give a size such as 50Gi`},
		{name: "a negative quota of bytes", current: teams, args: []string{"--tenant-max-bytes", "-1Gi"}, wantErr: `--tenant-max-bytes "-1Gi"`},
		{name: "a negative quota", current: teams, args: []string{"--tenant-max-backups", "-1"}, wantErr: "--tenant-max-backups -1: must not be negative"},
		{name: "a quota on a location with no tenants", args: []string{"--tenant-max-concurrent-jobs", "1"}, wantErr: "--tenant-max-concurrent-jobs is a quota of the location's tenants: give --tenant-selector too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tf tenantFlags
			f := pflag.NewFlagSet("set", pflag.ContinueOnError)
			tf.bind(f, true)
			if err := f.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if !tf.given(f) {
				t.Fatal("the flags were given, given says not")
			}
			before := tc.current.DeepCopy()
			got, err := tf.apply(f, tc.current)
			if !reflect.DeepEqual(tc.current, before) {
				t.Errorf("apply changed the location as read: %+v", tc.current)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("made %+v, want %+v", got, tc.want)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
