package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestVerifyBackup: `salvor backup verify` passes on a fresh backup, object
// by object; after one byte of the tarball is flipped in the location it
// fails naming the tarball, and after the results file is deleted it fails
// naming that file; each outcome is in status.verification. A backup
// written by Velero (no manifest) is verified as far as it can be, and
// says so; a hostile tarball fails to read whole.
func TestVerifyBackup(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	raw := openObjectStore(t, cfg)
	ctx := context.Background()
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "shop"}, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "shop"}, StringData: map[string]string{"p": "x"}})
	c.mustSalvor(t, "backup", "create", "shop-1", "--include-namespaces", "shop", "--wait")

	out := c.mustSalvor(t, "backup", "verify", "shop-1")
	for _, want := range []string{"Verification: Passed", "shop-1.tar.gz", "shop-1-results.gz", "velero-backup.json", "Items read whole: 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify of a fresh backup lacks %q:\n%s", want, out)
		}
	}
	v := c.getBackup(t, "shop-1").Status.Verification
	if v == nil || v.Phase != salvorv1.VerificationPhasePassed || !v.Manifest || v.CompletionTimestamp == nil || len(v.Failures) != 0 {
		t.Fatalf("status.verification of a fresh backup: %+v", v)
	}
	for _, o := range v.Objects {
		if o.Result != salvorv1.ObjectOK {
			t.Errorf("object %s of a fresh backup: %s %s", o.Name, o.Result, o.Detail)
		}
	}
	if len(v.Objects) < 7 {
		t.Errorf("only %d objects verified: %+v", len(v.Objects), v.Objects)
	}

	// One byte of the tarball flipped.
	key := "backups/shop-1/shop-1.tar.gz"
	rc, err := raw.GetObject(ctx, cfg["bucket"], key)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := io.ReadAll(rc)
	rc.Close()
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0x01
	if err := raw.PutObject(ctx, cfg["bucket"], key, bytes.NewReader(bad)); err != nil {
		t.Fatal(err)
	}
	out, err = c.salvor(t, "backup", "verify", "shop-1")
	if err == nil || !strings.Contains(out, "Verification: Failed") || !strings.Contains(out, "shop-1.tar.gz: changed") {
		t.Errorf("verify after a byte of the tarball was flipped: %v\n%s", err, out)
	}
	v = c.getBackup(t, "shop-1").Status.Verification
	if v.Phase != salvorv1.VerificationPhaseFailed || !strings.Contains(strings.Join(v.Failures, "\n"), "shop-1.tar.gz: changed") {
		t.Errorf("status.verification after the flip: %s %q", v.Phase, v.Failures)
	}

	// The tarball put back, the results file deleted.
	if err := raw.PutObject(ctx, cfg["bucket"], key, bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	if err := raw.DeleteObject(ctx, cfg["bucket"], "backups/shop-1/shop-1-results.gz"); err != nil {
		t.Fatal(err)
	}
	out, err = c.salvor(t, "backup", "verify", "shop-1")
	if err == nil || !strings.Contains(out, "shop-1-results.gz: missing") || strings.Contains(out, "shop-1.tar.gz: changed") {
		t.Errorf("verify after the results file was deleted: %v\n%s", err, out)
	}
	v = c.getBackup(t, "shop-1").Status.Verification
	if v.Phase != salvorv1.VerificationPhaseFailed || len(v.Failures) != 1 || !strings.Contains(v.Failures[0], "shop-1-results.gz: missing") {
		t.Errorf("status.verification after the results were deleted: %s %q", v.Phase, v.Failures)
	}
	// describe shows the last outcome.
	if out := c.mustSalvor(t, "backup", "describe", "shop-1"); !strings.Contains(out, "Verification: Failed") || !strings.Contains(out, "missing") {
		t.Errorf("describe after a failed verification:\n%s", out)
	}

	// A backup as Velero writes it: no manifest.
	store := openStore(t, cfg)
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"from-velero","namespace":"vns"},"data":{"k":"v"}}`
	if err := raw.PutObject(ctx, cfg["bucket"], "backups/velero-made/velero-made.tar.gz", bytes.NewReader(tarballOf([][2]string{
		{"metadata/version", "1.1.0\n"},
		{"resources/configmaps/namespaces/vns/from-velero.json", cm},
		{"resources/configmaps/v1-preferredversion/namespaces/vns/from-velero.json", cm},
	}))); err != nil {
		t.Fatal(err)
	}
	if err := store.PutJSON(ctx, "velero-made", persistence.ResourceListFile, map[string][]string{"v1/ConfigMap": {"vns/from-velero"}}); err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{"apiVersion": "velero.io/v1", "kind": "Backup", "metadata": map[string]any{"name": "velero-made", "namespace": "velero"},
		"spec": map[string]any{"storageLocation": "default"}, "status": map[string]any{"phase": "Completed", "version": 1}}
	putVeleroMetadata(t, cfg, "velero-made", meta)
	c.waitBackup(t, "velero-made", salvorv1.BackupPhaseCompleted)
	out = c.mustSalvor(t, "backup", "verify", "velero-made")
	for _, want := range []string{"Verification: Passed", "No manifest", "no checksum could be checked", "unchecked", "Items read whole: 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify of a Velero backup lacks %q:\n%s", want, out)
		}
	}
	if v := c.getBackup(t, "velero-made").Status.Verification; v.Manifest || v.Phase != salvorv1.VerificationPhasePassed {
		t.Errorf("status.verification of a Velero backup: %+v", v)
	}

	// A Velero-shaped backup whose resource list names an item its
	// tarball lacks, and one whose tarball climbs out of the archive.
	if err := store.PutJSON(ctx, "velero-made", persistence.ResourceListFile, map[string][]string{"v1/ConfigMap": {"vns/from-velero", "vns/lost"}}); err != nil {
		t.Fatal(err)
	}
	out, err = c.salvor(t, "backup", "verify", "velero-made")
	if err == nil || !strings.Contains(out, "the resource list names v1/ConfigMap vns/lost, which the tarball does not hold") {
		t.Errorf("verify of a backup whose resource list names a missing item: %v\n%s", err, out)
	}
	if err := raw.PutObject(ctx, cfg["bucket"], "backups/evil/evil.tar.gz", bytes.NewReader(tarballOf([][2]string{
		{"metadata/version", "1.1.0\n"},
		{"resources/configmaps/namespaces/../../../etc/x.json", cm},
	}))); err != nil {
		t.Fatal(err)
	}
	meta["metadata"] = map[string]any{"name": "evil"}
	putVeleroMetadata(t, cfg, "evil", meta)
	c.waitBackup(t, "evil", salvorv1.BackupPhaseCompleted)
	out, err = c.salvor(t, "backup", "verify", "evil")
	if err == nil || !strings.Contains(out, "does not read whole") || !strings.Contains(out, "leaves the archive") {
		t.Errorf("verify of a hostile tarball: %v\n%s", err, out)
	}
}

// TestTestRestore: `salvor backup verify --restore-into-prefix` restores a
// namespace of several kinds into drill-<namespace>, finds every restored
// object identical to the backup, records it, and deletes the namespace it
// made; the original namespace is not touched (resourceVersions compared).
// A target namespace that exists already refuses the test restore before
// anything is created.
func TestTestRestore(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	ctx := context.Background()
	replicas := int32(2)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "a"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "shop"}, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "shop"}, StringData: map[string]string{"p": "x"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "runner", Namespace: "shop"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Port: 80}}, Selector: map[string]string{"app": "web"}}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.io/web:1"}}}}}},
		// A node port its creator set, which the drill's copy cannot have
		// while the original holds it (it gets one assigned), and a claim
		// with a volume of reclaim policy Delete and no snapshot: both
		// compare identical.
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "shop"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
			Ports: []corev1.ServicePort{{Port: 80, NodePort: 30081}}, Selector: map[string]string{"app": "web"}}},
		// Production's traffic and schedules, which the drill's copies must
		// not take or run.
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "public", Namespace: "shop"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Port: 443}}, Selector: map[string]string{"app": "web"}, ExternalIPs: []string{"192.0.2.10"}}},
		&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "shop"}, Spec: batchv1.CronJobSpec{Schedule: "@daily",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "job", Image: "example.io/job:1"}}}}}}}},
		&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "www", Namespace: "shop"}, Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "shop.example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}})
	cache := hostPathVolume("shop-cache", t.TempDir(), "shop", "cache")
	cache[0].(*corev1.PersistentVolume).Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
	c.create(t, cache...)
	c.mustSalvor(t, "backup", "create", "shop-1", "--include-namespaces", "shop", "--wait")
	before := versionsIn(t, c, "shop")

	out := c.mustSalvor(t, "backup", "verify", "shop-1", "--restore-into-prefix", "drill")
	for _, want := range []string{"Verification: Passed", "Test restore: shop-1-verify-", "into drill-shop", "9 objects compared, 9 identical to the backup, 0 differ", "Cleaned up",
		"Made inert: a deny-all NetworkPolicy in each namespace", "deployments.apps drill-shop/web: scaled to 0 replicas", "cronjobs.batch drill-shop/nightly: suspended",
		"services drill-shop/edge: made ClusterIP (was NodePort)", "services drill-shop/public: made ClusterIP (was LoadBalancer), external IPs dropped",
		"ingresses.networking.k8s.io drill-shop/www: not restored: its hosts would take live traffic"} {
		if !strings.Contains(out, want) {
			t.Errorf("test restore output lacks %q:\n%s", want, out)
		}
	}
	v := c.getBackup(t, "shop-1").Status.Verification
	if v == nil || v.Phase != salvorv1.VerificationPhasePassed || v.TestRestore == nil {
		t.Fatalf("status.verification: %+v", v)
	}
	tr := v.TestRestore
	if tr.Prefix != "drill" || tr.RestorePhase != "Completed" || tr.Compared != 9 || tr.Identical != 9 || !tr.CleanedUp || len(tr.Namespaces) != 1 || tr.Namespaces[0] != "drill-shop" {
		t.Errorf("status.verification.testRestore: %+v", tr)
	}
	rs := c.getRestore(t, tr.Restore)
	if rs.Labels[salvorv1.TestRestoreLabel] != "shop-1" || rs.Spec.NamespaceMapping["shop"] != "drill-shop" || len(rs.OwnerReferences) != 1 {
		t.Errorf("the test restore's Restore: labels %v, mapping %v, owners %v", rs.Labels, rs.Spec.NamespaceMapping, rs.OwnerReferences)
	}
	// The server deleted the namespace it made; with no namespace
	// controller on the testbed, the test finalizes it as one would.
	ns := &corev1.Namespace{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "drill-shop"}, ns); err != nil || ns.DeletionTimestamp == nil {
		t.Fatalf("drill-shop after the test restore: deleting %v, %v", ns.DeletionTimestamp, err)
	}
	// What the drill made (still there until its namespace is finalized)
	// runs nothing and takes no traffic.
	dep, svc, cron := &appsv1.Deployment{}, &corev1.Service{}, &batchv1.CronJob{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "drill-shop", Name: "web"}, dep); err != nil || dep.Spec.Replicas == nil || *dep.Spec.Replicas != 0 {
		t.Errorf("the drill's deployment: replicas %v, %v; want 0", dep.Spec.Replicas, err)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "drill-shop", Name: "public"}, svc); err != nil || svc.Spec.Type != corev1.ServiceTypeClusterIP || len(svc.Spec.ExternalIPs) != 0 {
		t.Errorf("the drill's load balancer: %s %v, %v", svc.Spec.Type, svc.Spec.ExternalIPs, err)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "drill-shop", Name: "nightly"}, cron); err != nil || cron.Spec.Suspend == nil || !*cron.Spec.Suspend {
		t.Errorf("the drill's cron job: suspend %v, %v", cron.Spec.Suspend, err)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "drill-shop", Name: "www"}, &networkingv1.Ingress{}); !apierrors.IsNotFound(err) {
		t.Errorf("the drill's ingress was made: %v", err)
	}
	np := &networkingv1.NetworkPolicy{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "drill-shop", Name: "salvor-test-restore-deny-all"}, np); err != nil ||
		len(np.Spec.PolicyTypes) != 2 || len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 0 || len(np.Spec.PodSelector.MatchLabels) != 0 {
		t.Errorf("the drill's deny-all policy: %+v, %v", np.Spec, err)
	}
	c.finalizeNamespace(t, "drill-shop")
	if after := versionsIn(t, c, "shop"); !maps.Equal(before, after) {
		t.Errorf("the original namespace changed: before %v, after %v", before, after)
	}

	// A target that exists already: refused, nothing created.
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "taken-shop"}})
	out, err := c.salvor(t, "backup", "verify", "shop-1", "--restore-into-prefix", "taken")
	if err == nil || !strings.Contains(out, "namespace taken-shop exists; a test restore restores only into namespaces it makes") {
		t.Errorf("a test restore into an existing namespace: %v\n%s", err, out)
	}
	if got := versionsIn(t, c, "taken-shop"); len(got) != 0 {
		t.Errorf("the existing namespace got %v", got)
	}
}

// versionsIn maps every ConfigMap, Secret, ServiceAccount, Service and
// Deployment in namespace ns to its resourceVersion.
func versionsIn(t *testing.T, c *cluster, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range []client.ObjectList{&corev1.ConfigMapList{}, &corev1.SecretList{}, &corev1.ServiceAccountList{}, &corev1.ServiceList{}, &appsv1.DeploymentList{}} {
		if err := c.client.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, _ := meta.ExtractList(l)
		for _, it := range items {
			o := it.(client.Object)
			out[fmt.Sprintf("%T/%s", o, o.GetName())] = o.GetResourceVersion()
		}
	}
	return out
}

// finalizeNamespace does what the namespace controller (absent on the
// testbed) does for a deleted namespace once it is empty: it clears the
// namespace's finalizers, so the namespace goes.
func (c *cluster) finalizeNamespace(t *testing.T, name string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Spec.Finalizers = nil
	if _, err := cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "namespace "+name+" gone", time.Minute, func() (bool, string) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), errString(err)
	})
}

// TestScheduleVerify: a schedule with spec.verify verifies its first
// backup and every Nth after it once each ends, and test-restores them
// when given a prefix; the others are left alone.
func TestScheduleVerify(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cadence"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "cadence"}, Data: map[string]string{"k": "v"}})

	c.mustSalvor(t, "schedule", "create", "every-other", "--schedule", "@every 2s", "--include-namespaces", "cadence", "--verify-every", "2")
	var backups []salvorv1.Backup
	eventually(t, "three backups of the schedule, ended", time.Minute, func() (bool, string) {
		backups = c.scheduleBackups(t, "every-other")
		if len(backups) < 3 {
			return false, fmt.Sprint(len(backups), " backups")
		}
		for _, b := range backups[:3] {
			if b.Status.Phase != salvorv1.BackupPhaseCompleted {
				return false, b.Name + " is " + string(b.Status.Phase)
			}
			if b.Annotations[salvorv1.VerifyAnnotation] != "" && (b.Status.Verification == nil || b.Status.Verification.Phase == salvorv1.VerificationPhaseInProgress) {
				return false, b.Name + " is not verified yet"
			}
		}
		return true, ""
	})
	c.mustSalvor(t, "schedule", "pause", "every-other")
	for i, b := range backups[:3] {
		v := b.Status.Verification
		if i%2 == 0 && (v == nil || v.Phase != salvorv1.VerificationPhasePassed || !v.Manifest) {
			t.Errorf("backup %d (%s) of a schedule verifying every 2nd: %+v", i+1, b.Name, v)
		}
		if i%2 == 1 && (v != nil || b.Annotations[salvorv1.VerifyAnnotation] != "") {
			t.Errorf("backup %d (%s) was verified: %+v", i+1, b.Name, v)
		}
	}
	if out := c.mustSalvor(t, "schedule", "describe", "every-other"); !strings.Contains(out, "the first backup and every 2 after it") {
		t.Errorf("schedule describe lacks spec.verify:\n%s", out)
	}

	c.mustSalvor(t, "schedule", "create", "drilled", "--schedule", "@every 1h", "--include-namespaces", "cadence",
		"--verify-every", "1", "--verify-restore-into-prefix", "drill")
	var b salvorv1.Backup
	eventually(t, "the drilled schedule's first backup, verified", time.Minute, func() (bool, string) {
		bs := c.scheduleBackups(t, "drilled")
		if len(bs) == 0 {
			return false, "no backup yet"
		}
		b = bs[0]
		v := b.Status.Verification
		return v != nil && v.Phase != salvorv1.VerificationPhaseInProgress, fmt.Sprintf("%s %+v", b.Status.Phase, v)
	})
	if tr := b.Status.Verification.TestRestore; b.Status.Verification.Phase != salvorv1.VerificationPhasePassed || tr == nil ||
		tr.Compared != 1 || tr.Identical != 1 || !tr.CleanedUp || tr.Namespaces[0] != "drill-cadence" {
		t.Errorf("the drilled schedule's backup: %+v, test restore %+v", b.Status.Verification, b.Status.Verification.TestRestore)
	}
	// A bad prefix fails the schedule's validation.
	_, _ = c.salvor(t, "schedule", "create", "bad-prefix", "--schedule", "@daily", "--verify-every", "1", "--verify-restore-into-prefix", "Not_A_Name")
	eventually(t, "the bad prefix refused", 30*time.Second, func() (bool, string) {
		s := c.schedule(t, "bad-prefix")
		return s.Status.Phase == salvorv1.SchedulePhaseFailedValidation && strings.Contains(strings.Join(s.Status.ValidationErrors, " "), "spec.verify.restoreIntoPrefix"),
			fmt.Sprint(s.Status.Phase, s.Status.ValidationErrors)
	})
}
