package csiplugin

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func TestSnapshotName(t *testing.T) {
	b := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", UID: "u1"}}
	long := strings.Repeat("a", 250)
	for _, tc := range []struct{ ns, claim string }{{"app", "data"}, {"app", long}, {"other", "data"}, {"app", "x." + long}} {
		name := SnapshotName(b, tc.ns, tc.claim)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("SnapshotName(%s, %.20s...) = %q: %v", tc.ns, tc.claim, name, errs)
		}
		if again := SnapshotName(b, tc.ns, tc.claim); again != name {
			t.Errorf("SnapshotName is not stable: %q then %q", name, again)
		}
	}
	if SnapshotName(b, "app", "data") == SnapshotName(b, "other", "data") {
		t.Error("claims of the same name in two namespaces share a snapshot name")
	}
	other := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", UID: "u2"}}
	if SnapshotName(b, "app", "data") == SnapshotName(other, "app", "data") {
		t.Error("two backups of the same name (another UID) share a snapshot name")
	}
	if !strings.HasPrefix(SnapshotName(b, "app", "data"), "salvor-nightly-data-") {
		t.Errorf("SnapshotName = %q: want it to name the backup and claim", SnapshotName(b, "app", "data"))
	}
}

func TestParseID(t *testing.T) {
	for id, ok := range map[string]bool{
		"app/salvor-nightly-data-1a2b3c4d": true,
		"app":                              false,
		"/name":                            false,
		"app/":                             false,
		"../etc/passwd":                    false,
		"App/name":                         false,
		"app/name/more":                    false,
	} {
		ns, name, err := parseID(id)
		if (err == nil) != ok {
			t.Errorf("parseID(%q) = %q, %q, %v; want ok %v", id, ns, name, err, ok)
		}
	}
}

func TestContentName(t *testing.T) {
	r := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "u"}}
	a, b := ContentName(r, "app", "s"), ContentName(r, "app-copy", "s")
	if a == b || a != ContentName(r, "app", "s") || len(validation.IsDNS1123Subdomain(a)) > 0 {
		t.Errorf("ContentName: %q and %q", a, b)
	}
}

func TestDownloadName(t *testing.T) {
	r := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("r", 70), UID: "u1"}}
	name := DownloadName(r, "app", "data")
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 || len(name) > 63 {
		t.Errorf("DownloadName = %q (%d characters): %v", name, len(name), errs)
	}
	if DownloadName(r, "app", "data") != name {
		t.Error("DownloadName is not stable")
	}
	for _, other := range []string{DownloadName(r, "app", "logs"), DownloadName(r, "other", "data"),
		DownloadName(&salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: r.Name, UID: "u2"}}, "app", "data")} {
		if other == name {
			t.Errorf("two claims or restores share DataDownload %s", name)
		}
	}
}
