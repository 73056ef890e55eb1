package location

import (
	"strings"
	"testing"

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
