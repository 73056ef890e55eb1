package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestOrderedResources: a backup's orderedResources (Velero's field and
// --ordered-resources flag) backs up the named items one after another in
// the order given — the tarball holds them so — while the others are
// backed up alongside; a named item the backup does not select is said in
// its log, not backed up; entries that do not fit their resource's scope,
// and resources the cluster does not serve, fail validation saying what to
// write.
func TestOrderedResources(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	for _, ns := range []string{"ord", "ord2", "elsewhere"} {
		c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	for i := range 16 {
		c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%02d", i), Namespace: "ord"}, Data: map[string]string{"i": fmt.Sprint(i)}})
	}
	c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c00", Namespace: "ord2"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c01", Namespace: "elsewhere"}})

	order := "configmaps=ord/c13,ord/c02,ord2/c00,ord/c09,elsewhere/c01,ord/c00,ord/missing;ns=ord2,ord"
	c.mustSalvor(t, "backup", "create", "ordered", "--include-namespaces", "ord,ord2", "--ordered-resources", order, "--wait")
	b := c.getBackup(t, "ordered")
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.Warnings != 0 || b.Status.Errors != 0 {
		t.Fatalf("backup with orderedResources: %+v", b.Status)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(b.Spec.OrderedResources)), []string{"configmaps", "ns"}) {
		t.Errorf("spec.orderedResources: %v", b.Spec.OrderedResources)
	}

	rc, err := openStore(t, cfg).GetTarball(context.Background(), "ordered")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var configMaps, namespaces []string
	if _, err := archive.Read(rc, func(e archive.Entry) error {
		switch {
		case e.Version != "": // the preferred-version copy, written with the other
		case e.Resource == "configmaps" && e.Group == "":
			configMaps = append(configMaps, e.Namespace+"/"+e.Name)
		case e.Resource == "namespaces" && e.Group == "":
			namespaces = append(namespaces, e.Name)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The 16 + 1 made here; elsewhere is not selected.
	if len(configMaps) != 17 || slices.Contains(configMaps, "elsewhere/c01") {
		t.Errorf("configmaps backed up: %v", configMaps)
	}
	var named []string
	for _, cm := range configMaps {
		if slices.Contains([]string{"ord/c13", "ord/c02", "ord2/c00", "ord/c09", "ord/c00"}, cm) {
			named = append(named, cm)
		}
	}
	if want := []string{"ord/c13", "ord/c02", "ord2/c00", "ord/c09", "ord/c00"}; !slices.Equal(named, want) {
		t.Errorf("the named configmaps are in the tarball in the order %v, want %v (all: %v)", named, want, configMaps)
	}
	if !slices.Equal(namespaces, []string{"ord2", "ord"}) {
		t.Errorf("the namespaces are in the tarball in the order %v, want ord2 then ord", namespaces)
	}
	logs := c.mustSalvor(t, "backup", "logs", "ordered")
	for _, item := range []string{"elsewhere/c01", "ord/missing"} {
		if !strings.Contains(logs, "orderedResources names an item the backup does not select") || !strings.Contains(logs, item) {
			t.Errorf("the backup's log does not say orderedResources names %s, which it does not select:\n%s", item, logs)
		}
	}
	if desc := c.mustSalvor(t, "backup", "describe", "ordered"); !strings.Contains(desc, "Ordered configmaps: ord/c13,ord/c02,ord2/c00,ord/c09,elsewhere/c01,ord/c00,ord/missing") ||
		!strings.Contains(desc, "Ordered ns: ord2,ord") {
		t.Errorf("backup describe does not show the order:\n%s", desc)
	}

	for _, tc := range []struct{ name, order, says string }{
		{"no-namespace", "configmaps=c01", `orderedResources configmaps: "c01" names no namespace, and configmaps are namespaced: write namespace/c01`},
		{"a-namespace", "namespaces=default/ord", `orderedResources namespaces: "default/ord" names a namespace, and namespaces are cluster-scoped: write ord`},
		{"unserved", "gizmos=ord/a", `orderedResources: "gizmos" is not a resource this cluster serves`},
		{"twice", "pods=ord/a,ord/a", "orderedResources pods: ord/a is named twice"},
	} {
		_, _ = c.salvor(t, "backup", "create", tc.name, "--include-namespaces", "ord", "--ordered-resources", tc.order)
		if b := c.waitBackup(t, tc.name, salvorv1.BackupPhaseFailedValidation, salvorv1.BackupPhaseCompleted); b.Status.Phase != salvorv1.BackupPhaseFailedValidation ||
			!strings.Contains(strings.Join(b.Status.ValidationErrors, "\n"), tc.says) {
			t.Errorf("--ordered-resources %s: %s %q, want %q", tc.order, b.Status.Phase, b.Status.ValidationErrors, tc.says)
		}
	}
	if out, err := c.salvor(t, "backup", "create", "malformed", "--ordered-resources", "pods"); err == nil || !strings.Contains(out, `--ordered-resources "pods": want RESOURCE=NAMESPACE/NAME`) {
		t.Errorf("--ordered-resources pods: %v\n%s", err, out)
	}
}
