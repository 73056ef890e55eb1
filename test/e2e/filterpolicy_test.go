package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestFilterPolicies: Velero 1.18's filter policies in a resource policies
// ConfigMap, through the CLI. A backup's clusterScopedFilterPolicy chooses
// the items of the cluster-scoped resources it names by its own selector
// and names; a namespace a namespacedFilterPolicies entry decides gets
// only the resources its filters name (a filter without kinds, every
// other), each by the filter's selectors and names in place of the
// backup's; other namespaces are chosen by the backup's selector. A pod's
// claims come along unless a filter's names leave them out. A restore takes
// filter policies too, judged on each item's namespace in the backup. Names
// that mean no resource, resources of the other scope, Velero's older
// filters alongside, and a backup's policies on a restore fail validation.
func TestFilterPolicies(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	ctx := context.Background()
	for _, ns := range []string{"shop", "app-a", "other"} {
		c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	cm := func(ns, name string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
	}
	secret := func(name, tier string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"tier": tier, "keep": "yes"}}}
	}
	claim := func(name string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app-a"}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	}
	keep := map[string]string{"keep": "yes"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "worker", Namespace: "app-a", Labels: map[string]string{"backup": "yes"}}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "main", Image: "busybox"}},
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-keep"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "scratch-x"}}}}}}
	c.create(t,
		cm("shop", "db-main", keep), cm("shop", "db-tmp", keep), cm("shop", "web-settings", keep),
		secret("db-password", "db"), secret("api-key", "api"), secret("misc", "cache"),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "shop", Labels: keep}},
		cm("app-a", "a1", map[string]string{"backup": "yes"}), cm("app-a", "a2", keep),
		pod, claim("data-keep"), claim("data-other"), claim("scratch-x"),
		cm("other", "o1", keep), cm("other", "o2", nil),
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "shop-reader", Labels: map[string]string{"team": "shop"}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "shop-tmp-1", Labels: map[string]string{"team": "shop"}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "other-reader", Labels: keep}},
	)
	policies := func(name, text string) {
		c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "salvor"}, Data: map[string]string{"policies.yaml": text}})
	}
	policies("fine", `version: v1
clusterScopedFilterPolicy:
  resourceFilters:
  - kinds: [clusterroles]
    labelSelector: {matchLabels: {team: shop}}
    excludedNames: ["shop-tmp-*"]
namespacedFilterPolicies:
- namespaces: [shop]
  resourceFilters:
  - kinds: [ConfigMap]
    names: ["db-*"]
    excludedNames: ["*-tmp"]
  - kinds: [secrets]
    orLabelSelectors: [{matchLabels: {tier: db}}, {matchLabels: {tier: api}}]
- namespaces: ["app-?"]
  resourceFilters:
  - kinds: [pvc]
    names: ["data-*"]
  - labelSelector: {matchLabels: {backup: "yes"}}
`)
	c.mustSalvor(t, "backup", "create", "fine", "--include-namespaces", "shop,app-a,other", "--include-cluster-scoped-resources", "clusterroles",
		"--selector", "keep=yes", "--snapshot-volumes=false", "--resource-policies-configmap", "fine", "--wait")
	b := c.getBackup(t, "fine")
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.Errors != 0 {
		t.Fatalf("backup with filter policies: %+v", b.Status)
	}
	rc, err := openStore(t, cfg).GetTarball(ctx, "fine")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var items []string
	if _, err := archive.Read(rc, func(e archive.Entry) error {
		if e.Version == "" && e.Resource != "namespaces" {
			items = append(items, e.Resource+"/"+e.Namespace+"/"+e.Name)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(items)
	want := []string{
		"clusterroles//shop-reader",               // team: shop, and not shop-tmp-*; other-reader has keep=yes, which this filter does not ask
		"configmaps/app-a/a1",                     // the catch-all's selector, not the backup's (a2 has keep=yes)
		"configmaps/other/o1",                     // no policy decides other: the backup's selector
		"configmaps/shop/db-main",                 // db-* but not *-tmp; web-settings is not named
		"persistentvolumeclaims/app-a/data-keep",  // the pod's, its name let in
		"persistentvolumeclaims/app-a/data-other", // its own filter: any data-*
		"pods/app-a/worker",                       // the catch-all
		"secrets/shop/api-key",                    // tier api
		"secrets/shop/db-password",                // tier db; not misc, nor the service account (shop's policy names neither)
	}
	if !slices.Equal(items, want) {
		t.Errorf("the backup holds\n%v\nwant\n%v", items, want)
	}
	if out := c.mustSalvor(t, "backup", "describe", "fine"); !strings.Contains(out, "Resource policies: configmap fine") {
		t.Errorf("describe:\n%s", out)
	}

	// A restore's filter policies, judged on each item's namespace in the
	// backup (shop), not the one it is mapped to.
	policies("restore-fine", `version: v1
clusterScopedFilterPolicy:
  resourceFilters:
  - kinds: [clusterrole]
    excludedNames: ["shop-*"]
namespacedFilterPolicies:
- namespaces: [shop]
  resourceFilters:
  - kinds: [secrets]
    excludedNames: [api-key]
  - kinds: [configmaps]
`)
	c.deleteForGood(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "shop-reader"}})
	c.mustSalvor(t, "restore", "create", "fine", "--from-backup", "fine", "--include-namespaces", "shop,other", "--include-cluster-resources",
		"--namespace-mappings", "shop:shop-r,other:other-r", "--resource-policies-configmap", "restore-fine", "--wait")
	rs := c.getRestore(t, "fine")
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Errors != 0 {
		t.Fatalf("restore with filter policies: %s %q %+v", rs.Status.Phase, rs.Status.ValidationErrors, rs.Status)
	}
	for _, it := range []struct {
		obj  client.Object
		made bool
	}{
		{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop-r", Name: "db-password"}}, true},
		{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop-r", Name: "api-key"}}, false},
		{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop-r", Name: "db-main"}}, true},
		{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other-r", Name: "o1"}}, true}, // other: the restore's (empty) selector
		{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "shop-reader"}}, false},
	} {
		err := c.client.Get(ctx, client.ObjectKeyFromObject(it.obj), it.obj)
		if it.made != (err == nil) || err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("%T %s after the restore: %v, want made: %v", it.obj, client.ObjectKeyFromObject(it.obj), err, it.made)
		}
	}
	if out := c.mustSalvor(t, "restore", "describe", "fine"); !strings.Contains(out, "Resource policies: configmap restore-fine") {
		t.Errorf("restore describe:\n%s", out)
	}
	// The backup holds shop-reader: a restore without the policy makes it.
	c.mustSalvor(t, "restore", "create", "roles", "--from-backup", "fine", "--include-resources", "clusterroles", "--include-cluster-resources", "--wait")
	if err := c.client.Get(ctx, client.ObjectKey{Name: "shop-reader"}, &rbacv1.ClusterRole{}); err != nil {
		t.Errorf("a restore without the policy did not make shop-reader: %v", err)
	}

	// A filter for a resource the spec leaves out chooses nothing: a
	// warning says so, and the rest is done.
	c.mustSalvor(t, "backup", "create", "idle", "--include-namespaces", "shop", "--exclude-namespace-scoped-resources", "secrets",
		"--resource-policies-configmap", "fine", "--wait")
	b = c.getBackup(t, "idle")
	desc := c.mustSalvor(t, "backup", "describe", "idle", "--details")
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.Warnings != 2 || !strings.Contains(desc,
		"resource policies configmap salvor/fine: namespacedFilterPolicies[0].resourceFilters[1].kinds names secrets, which the backup does not take: the filter chooses nothing") ||
		// A backup of some namespaces takes no cluster-scoped resources.
		!strings.Contains(desc, "clusterScopedFilterPolicy.resourceFilters[0].kinds names clusterroles.rbac.authorization.k8s.io, which the backup does not take") {
		t.Errorf("a backup whose filter names a resource it excludes: %+v\n%s", b.Status, desc)
	}
	c.mustSalvor(t, "restore", "create", "idle", "--from-backup", "fine", "--include-namespaces", "shop", "--namespace-mappings", "shop:shop-idle",
		"--exclude-resources", "secrets", "--resource-policies-configmap", "restore-fine", "--wait")
	rs = c.getRestore(t, "idle")
	desc = c.mustSalvor(t, "restore", "describe", "idle", "--details")
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Warnings != 1 || !strings.Contains(desc,
		"namespacedFilterPolicies[0].resourceFilters[0].kinds names secrets, which the restore does not take: the filter chooses nothing") {
		t.Errorf("a restore whose filter names a resource it excludes: %+v\n%s", rs.Status, desc)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "shop-idle", Name: "db-main"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the restore with an idle filter did not restore the rest: %v", err)
	}

	// Mistakes fail validation, saying what to fix.
	policies("unknown", "version: v1\nnamespacedFilterPolicies: [{namespaces: [shop], resourceFilters: [{kinds: [gizmos]}]}]")
	policies("scope", "version: v1\nnamespacedFilterPolicies: [{namespaces: [shop], resourceFilters: [{kinds: [clusterroles]}]}]")
	policies("two-catch-alls", "version: v1\nnamespacedFilterPolicies: [{namespaces: [shop], resourceFilters: [{}, {kinds: ['*']}]}]")
	policies("volumes", "version: v1\nvolumePolicies: [{conditions: {nfs: {}}, action: {type: skip}}]")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"bad-unknown": {[]string{"backup", "--include-namespaces", "shop", "--resource-policies-configmap", "unknown"},
			`resource policies configmap salvor/unknown: namespacedFilterPolicies[0].resourceFilters[0].kinds: "gizmos" is not a resource this cluster serves`},
		"bad-scope": {[]string{"backup", "--include-namespaces", "shop", "--resource-policies-configmap", "scope"},
			`namespacedFilterPolicies[0].resourceFilters[0].kinds: "clusterroles" is cluster-scoped: its filter belongs in clusterScopedFilterPolicy`},
		"bad-catch-all": {[]string{"backup", "--include-namespaces", "shop", "--resource-policies-configmap", "two-catch-alls"},
			"namespacedFilterPolicies[0].resourceFilters[1]: a second filter without kinds"},
		"bad-old-filters": {[]string{"backup", "--include-namespaces", "shop", "--include-resources", "configmaps", "--resource-policies-configmap", "fine"},
			"clusterScopedFilterPolicy and namespacedFilterPolicies choose items by scope, which does not combine with the backup's includedResources"},
		"bad-restore-unknown": {[]string{"restore", "--from-backup", "fine", "--resource-policies-configmap", "unknown"},
			`"gizmos" is not a resource this cluster serves`},
		"bad-restore-volumes": {[]string{"restore", "--from-backup", "fine", "--resource-policies-configmap", "volumes"},
			"volumePolicies decide what a backup takes of volumes, not what a restore makes"},
	} {
		args := append([]string{tc.args[0], "create", name}, tc.args[1:]...)
		_, _ = c.salvor(t, args...)
		var problems []string
		if tc.args[0] == "backup" {
			problems = c.waitBackup(t, name, salvorv1.BackupPhaseFailedValidation, salvorv1.BackupPhaseCompleted).Status.ValidationErrors
		} else {
			problems = c.waitRestore(t, name, salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhaseCompleted).Status.ValidationErrors
		}
		if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
			t.Errorf("%s: validation errors %q, want one with %q", name, problems, tc.want)
		}
	}
}
