package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/deploy/monitoring"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestInstallRBACIsEnough installs Salvor with `salvor install`, checks by
// SubjectAccessReview that the server's account is denied what it must
// never do (tokens, exec, attach, port forwarding, the kubelet, escalation,
// update and delete) and that the viewer and operator roles allow what
// they say and no more, then runs the server with the account's token (and
// nothing more) through a backup and a restore of several kinds — with a
// custom resource whose CRD predates the install — and checks that its
// metrics need an authorized token and its readiness is real.
func TestInstallRBACIsEnough(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.serveWidgets(t)

	dry := c.mustSalvor(t, "install", "--dry-run", "-o", "yaml", "--plugins", "example.io/plugins:v1")
	for _, w := range []string{"kind: CustomResourceDefinition", "kind: ServiceAccount", "kind: ClusterRole", "--leader-elect",
		"image: example.io/plugins:v1", "mountPath: /target", "kind: Deployment", "name: salvor-viewer", "name: salvor-operator",
		"name: salvor-metrics-reader", "- widgets"} {
		if !strings.Contains(dry, w) {
			t.Errorf("--dry-run output lacks %q", w)
		}
	}
	// The credentials go in a Secret the location names, not in a file
	// the server's pod would need mounted.
	out := c.mustSalvor(t, "install", "--provider", "salvor.dev/s3", "--bucket", "backups", "--secret-file", minio.CredentialsFile(t),
		"--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true")
	if !strings.Contains(out, "deployment/salvor applied") || !strings.Contains(out, "backupstoragelocation/default applied") {
		t.Errorf("install printed:\n%s", out)
	}
	// Applying again is harmless.
	c.mustSalvor(t, "install")

	cr := &rbacv1.ClusterRole{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "salvor-server-salvor"}, cr); err != nil {
		t.Fatal(err)
	}
	for _, r := range cr.Rules {
		// The CSI actions delete the snapshots they made, and nothing else.
		csiSnapshots := slices.Equal(r.APIGroups, []string{"snapshot.storage.k8s.io"}) &&
			slices.Equal(r.Resources, []string{"volumesnapshots", "volumesnapshotcontents"})
		for _, v := range r.Verbs {
			if (v == "delete" && !csiSnapshots) || v == "update" || v == "*" || v == "escalate" || v == "impersonate" || v == "bind" {
				t.Errorf("cluster role grants %q", v)
			}
		}
		for _, res := range r.Resources {
			// A restore's restoreStatus patches status subresources, and
			// nothing else is granted on one.
			status := strings.HasSuffix(res, "/status") && slices.Equal(r.Verbs, []string{"patch"})
			if res == "*" || strings.Contains(res, "/") && !status {
				t.Errorf("cluster role grants %v on %q: every resource, or a subresource", r.Verbs, res)
			}
		}
	}

	server := "system:serviceaccount:salvor:salvor"
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:salvor", "system:authenticated"}
	// The authorizer sees the installed bindings through its cache: once
	// it allows what the role grants, what it denies is denied for real.
	eventually(t, "the installed role in force", 30*time.Second, func() (bool, string) {
		return c.allowed(t, server, saGroups, &authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: "app"}, nil), "denied"
	})
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: "default"},
		{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "default"},
		{Verb: "get", Resource: "pods", Subresource: "exec", Namespace: "default"},
		{Verb: "create", Resource: "pods", Subresource: "attach", Namespace: "default"},
		{Verb: "create", Resource: "pods", Subresource: "portforward", Namespace: "default"},
		{Verb: "get", Resource: "nodes", Subresource: "proxy"},
		{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		{Verb: "impersonate", Resource: "users"},
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: "default"},
		{Verb: "update", Resource: "configmaps", Namespace: "default"},
		{Verb: "delete", Resource: "configmaps", Namespace: "default"},
		{Verb: "patch", Group: "coordination.k8s.io", Resource: "leases", Namespace: "kube-system"},
		{Verb: "patch", Resource: "nodes"},
		{Verb: "patch", Resource: "nodes", Subresource: "status"},
		{Verb: "update", Resource: "services", Subresource: "status", Namespace: "app"},
		{Verb: "patch", Resource: "pods", Subresource: "ephemeralcontainers", Namespace: "app"},
		{Verb: "create", Group: "storage.k8s.io", Resource: "volumeattachments"},
		{Verb: "delete", Group: "salvor.dev", Resource: "backups", Namespace: "elsewhere"},
		{Verb: "delete", Resource: "persistentvolumeclaims", Namespace: "app"},
		{Verb: "delete", Group: "snapshot.storage.k8s.io", Resource: "volumesnapshotclasses"},
	} {
		if c.allowed(t, server, saGroups, &a, nil) {
			t.Errorf("the server's account may %s %s/%s %s", a.Verb, a.Resource, a.Subresource, a.Namespace)
		}
	}
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "list", Resource: "secrets", Namespace: "app"},
		{Verb: "get", Group: "apps", Resource: "deployments", Namespace: "app"},
		{Verb: "create", Resource: "configmaps", Namespace: "app"},
		{Verb: "patch", Group: "apps", Resource: "deployments", Namespace: "app"},
		{Verb: "patch", Group: "apps", Resource: "deployments", Subresource: "status", Namespace: "app"},
		{Verb: "patch", Resource: "services", Subresource: "status", Namespace: "app"},
		{Verb: "list", Group: "example.io", Resource: "widgets", Namespace: "app"},
		{Verb: "create", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
		{Verb: "delete", Group: "salvor.dev", Resource: "backups", Namespace: "salvor"},
		// To tell a deleted Backup from an uninstall (namespace or CRD going).
		{Verb: "get", Resource: "namespaces"},
		{Verb: "get", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
		{Verb: "create", Group: "snapshot.storage.k8s.io", Resource: "volumesnapshots", Namespace: "app"},
		{Verb: "delete", Group: "snapshot.storage.k8s.io", Resource: "volumesnapshotcontents"},
	} {
		if !c.allowed(t, server, saGroups, &a, nil) {
			t.Errorf("the server's account may not %s %s.%s in %q", a.Verb, a.Resource, a.Group, a.Namespace)
		}
	}

	// Users bound in Salvor's namespace to the viewer and operator roles.
	for user, role := range map[string]string{"alice": "salvor-viewer", "bob": "salvor-operator"} {
		c.create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: "salvor"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}})
	}
	for _, tc := range []struct {
		user, verb, resource, namespace string
		want                            bool
	}{
		{"alice", "get", "backups", "salvor", true},
		{"alice", "list", "schedules", "salvor", true},
		{"alice", "create", "backups", "salvor", false},
		{"alice", "create", "downloadrequests", "salvor", false},
		{"alice", "get", "backups", "other", false},
		{"bob", "create", "backups", "salvor", true},
		{"bob", "create", "restores", "salvor", true},
		{"bob", "patch", "backups", "salvor", true},
		{"bob", "create", "downloadrequests", "salvor", true},
		{"bob", "delete", "backups", "salvor", false},
		{"bob", "update", "backupstoragelocations", "salvor", false},
	} {
		a := authorizationv1.ResourceAttributes{Verb: tc.verb, Group: "salvor.dev", Resource: tc.resource, Namespace: tc.namespace}
		if tc.want {
			// The authorizer sees new bindings through its cache: a moment late.
			eventually(t, fmt.Sprintf("%s may %s %s", tc.user, tc.verb, tc.resource), 30*time.Second, func() (bool, string) {
				return c.allowed(t, tc.user, []string{"system:authenticated"}, &a, nil), "denied"
			})
		} else if c.allowed(t, tc.user, []string{"system:authenticated"}, &a, nil) {
			t.Errorf("%s may %s %s in %s", tc.user, tc.verb, tc.resource, tc.namespace)
		}
	}
	metricsURL := &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}
	if c.allowed(t, server, saGroups, nil, metricsURL) {
		t.Error("the server's own account may read metrics: only salvor-metrics-reader should")
	}

	// Installed, but no server runs here (the testbed has no kubelet).
	if out, err := c.salvor(t, "version", "--timeout", "2s"); err == nil || !strings.Contains(out, "Client:") ||
		!strings.Contains(out, "no server answered in namespace salvor within 2s") {
		t.Errorf("version without a server: %v\n%s", err, out)
	}

	// --wait with no server says so, and Ctrl-C says the backup is not
	// going on anywhere.
	waiter := c.command("--kubeconfig", c.kubeconfig, "backup", "create", "orphan", "--include-namespaces", "none", "--wait")
	var waited syncBuffer
	waiter.Stdout, waiter.Stderr = &waited, &waited
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "--wait noticing that no server runs", time.Minute, func() (bool, string) {
		return strings.Contains(waited.String(), "No server has picked up backup orphan in 10s: is `salvor server` running for namespace salvor?"), waited.String()
	})
	_ = waiter.Process.Signal(os.Interrupt)
	if err := waiter.Wait(); err == nil || !strings.Contains(waited.String(), "it was still New, no server had picked it up in 10s") {
		t.Errorf("--wait interrupted with no server: %v\n%s", err, waited.String())
	}
	c.deleteForGood(t, &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "salvor"}})
	// A restore that has not ended is not deleted from under the server.
	c.create(t, &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "orphan"}})
	if out, err := c.salvor(t, "restore", "delete", "pending"); err == nil || !strings.Contains(out, "restore pending is New: cancel it first (salvor restore cancel pending)") {
		t.Errorf("restore delete of a restore that has not ended: %v\n%s", err, out)
	}
	c.deleteForGood(t, &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "salvor"}})

	// A kubeconfig with only the service account's token.
	sa := c.asServiceAccount(t, "salvor", "salvor")
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	healthAddr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	sa.startServer(t, "--metrics-address", metricsAddr, "--health-address", healthAddr)
	if bsl := c.waitLocation(t, "default", salvorv1.BackupStorageLocationPhaseAvailable); bsl.Spec.Credential == nil ||
		bsl.Spec.Credential.Name != "cloud-credentials" || bsl.Spec.Config["credentialsFile"] != "" {
		t.Errorf("the installed location's credentials: %+v, config %v", bsl.Spec.Credential, bsl.Spec.Config)
	}
	c.mustSalvor(t, "backup-location", "create", "no-secret", "--provider", "salvor.dev/s3", "--bucket", "backups",
		"--credential", "nope=cloud", "--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true")
	if bsl := c.waitLocation(t, "no-secret", salvorv1.BackupStorageLocationPhaseUnavailable); !strings.Contains(bsl.Status.Message, "credential secret salvor/nope") {
		t.Errorf("a location naming a missing Secret: %q", bsl.Status.Message)
	}
	c.deleteForGood(t, &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "no-secret", Namespace: "salvor"}})
	eventually(t, "the server ready", time.Minute, func() (bool, string) {
		code, body := fetch(t, "http://"+healthAddr+"/readyz", "")
		return code == http.StatusOK, fmt.Sprint(code, body)
	})

	lb := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "rbac"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rbac"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "rbac"}, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "rbac"}, Data: map[string][]byte{"p": []byte("w")}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "rbac"}},
		lb,
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "rbac"}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "rbac"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "rbac"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reader"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "app", Namespace: "rbac"}}},
		widget("rbac", "w1", 10))
	lb.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.9"}}
	if err := c.client.Status().Update(context.Background(), lb); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "backup", "create", "rbac", "--include-namespaces", "rbac", "--wait")
	c.mustSalvor(t, "restore", "create", "rbac", "--from-backup", "rbac", "--namespace-mappings", "rbac:rbac2", "--status-include-resources", "services", "--wait")
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "rbac2", Name: "web"}, lb); err != nil ||
		len(lb.Status.LoadBalancer.Ingress) != 1 || lb.Status.LoadBalancer.Ingress[0].IP != "203.0.113.9" {
		t.Errorf("the Service's status restored with the installed RBAC: %+v, %v", lb.Status, err)
	}
	for _, o := range []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}, &corev1.ServiceAccount{}, &corev1.Service{}, &appsv1.Deployment{},
		&rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		name := "web"
		switch o.(type) {
		case *corev1.ConfigMap:
			name = "c"
		case *corev1.Secret:
			name = "s"
		case *corev1.ServiceAccount:
			name = "app"
		case *rbacv1.Role, *rbacv1.RoleBinding:
			name = "reader"
		}
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "rbac2", Name: name}, o); err != nil {
			t.Errorf("restored with the installed RBAC: %T %s: %v", o, name, err)
		}
	}
	// Verification works with the installed RBAC; a test restore, which
	// deletes namespaces, is refused without --test-restores, before it
	// creates anything.
	if out := c.mustSalvor(t, "backup", "verify", "rbac"); !strings.Contains(out, "Verification: Passed") {
		t.Errorf("verify with the installed RBAC:\n%s", out)
	}
	if out, err := c.salvor(t, "backup", "verify", "rbac", "--restore-into-prefix", "drill"); err == nil ||
		!strings.Contains(out, "the server may not delete namespaces") || !strings.Contains(out, "salvor install --test-restores") {
		t.Errorf("a test restore without --test-restores: %v\n%s", err, out)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "drill-rbac"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused test restore made its namespace: %v", err)
	}
	// Backup hooks run commands in pods, a right the server holds only
	// with --exec-hooks: without it a backup with spec hooks fails
	// validation, and a pod's annotated hook fails, each saying what to
	// do; with it, the hook runs, and nothing else is granted.
	node := testbed.StartNode(t, c.restConfig, "node-a")
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hooked"}})
	c.hookPod(t, node, "hooked", "db", nil, map[string]string{"pre.hook.backup.velero.io/command": `["sh", "-c", "echo flushed > flushed"]`}, "db")
	c.create(t, &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "spec-hooks", Namespace: "salvor"}, Spec: salvorv1.BackupSpec{
		IncludedNamespaces: []string{"hooked"}, Hooks: &salvorv1.BackupHooks{Resources: []salvorv1.BackupResourceHookSpec{
			{Name: "flush", PreHooks: []salvorv1.BackupResourceHook{{Exec: &salvorv1.ExecHook{Command: []string{"sync"}}}}}}}}})
	if b := c.waitBackup(t, "spec-hooks", salvorv1.BackupPhaseFailedValidation, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed); b.Status.Phase != salvorv1.BackupPhaseFailedValidation ||
		!strings.Contains(strings.Join(b.Status.ValidationErrors, "\n"), "spec.hooks: the server may not run commands in pods (pods/exec): install it with `salvor install --exec-hooks`") {
		t.Errorf("a backup with hooks, without --exec-hooks: %s %q", b.Status.Phase, b.Status.ValidationErrors)
	}
	c.salvor(t, "backup", "create", "annotated-hook", "--include-namespaces", "hooked", "--wait")
	if b := c.waitBackup(t, "annotated-hook", salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailed); b.Status.Phase != salvorv1.BackupPhasePartiallyFailed ||
		!strings.Contains(words(c.mustSalvor(t, "backup", "describe", "annotated-hook", "--details")), "the server may not run commands in pods (pods/exec): install it with `salvor install --exec-hooks`") {
		t.Errorf("a pod's hook, without --exec-hooks: %s", b.Status.Phase)
	}
	promote := &salvorv1.RestoreHooks{Resources: []salvorv1.RestoreResourceHookSpec{
		{Name: "promote", PostHooks: []salvorv1.RestoreResourceHook{{Exec: &salvorv1.ExecRestoreHook{Command: []string{"sh", "-c", "echo promoted > promoted"}}}}}}}
	c.create(t, &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "restore-hooks-denied", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{
		BackupName: "annotated-hook", NamespaceMapping: map[string]string{"hooked": "hooked-denied"}, Hooks: promote}})
	if rs := c.waitRestore(t, "restore-hooks-denied", salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed); rs.Status.Phase != salvorv1.RestorePhaseFailedValidation ||
		!strings.Contains(strings.Join(rs.Status.ValidationErrors, "\n"), "spec.hooks: the server may not run commands in pods (pods/exec): install it with `salvor install --exec-hooks`") {
		t.Errorf("a restore with exec hooks, without --exec-hooks: %s %q", rs.Status.Phase, rs.Status.ValidationErrors)
	}
	// A restored pod's annotated hook fails at once, saying what to do.
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "promoted"}})
	c.hookPod(t, nil, "promoted", "replica", nil, map[string]string{"post.hook.restore.velero.io/command": "promote"}, "db")
	c.mustSalvor(t, "backup", "create", "promoted", "--include-namespaces", "promoted", "--wait")
	c.salvor(t, "restore", "create", "promoted-denied", "--from-backup", "promoted", "--namespace-mappings", "promoted:promoted-copy", "--wait")
	if rs := c.waitRestore(t, "promoted-denied", salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseCompleted, salvorv1.RestorePhaseFailed); rs.Status.Phase != salvorv1.RestorePhasePartiallyFailed ||
		!strings.Contains(words(c.mustSalvor(t, "restore", "describe", "promoted-denied", "--details")), "did not run in container db: the server may not run commands in pods (pods/exec): install it with `salvor install --exec-hooks`") {
		t.Errorf("a restored pod's hook, without --exec-hooks: %s\n%s", rs.Status.Phase, c.mustSalvor(t, "restore", "describe", "promoted-denied", "--details"))
	}
	if len(node.Execs()) != 0 {
		t.Errorf("commands ran without --exec-hooks: %+v", node.Execs())
	}
	c.mustSalvor(t, "install", "--exec-hooks")
	eventually(t, "the exec hooks role in force", 30*time.Second, func() (bool, string) {
		return c.allowed(t, server, saGroups, &authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "hooked"}, nil), "denied"
	})
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Resource: "pods", Subresource: "attach", Namespace: "hooked"},
		{Verb: "create", Resource: "pods", Subresource: "portforward", Namespace: "hooked"},
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: "hooked"},
	} {
		if c.allowed(t, server, saGroups, &a, nil) {
			t.Errorf("--exec-hooks grants %s %s/%s", a.Verb, a.Resource, a.Subresource)
		}
	}
	c.mustSalvor(t, "backup", "create", "hooks-allowed", "--include-namespaces", "hooked", "--wait")
	if b := c.waitBackup(t, "hooks-allowed", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed); b.Status.Phase != salvorv1.BackupPhaseCompleted ||
		b.Status.HookStatus == nil || b.Status.HookStatus.HooksAttempted != 1 || containerFile(node, "hooked", "db", "db", "flushed") != "flushed" {
		t.Errorf("a pod's hook, with --exec-hooks: %s %+v\n%s", b.Status.Phase, b.Status.HookStatus, c.mustSalvor(t, "backup", "describe", "hooks-allowed", "--details"))
	}
	// A restore's exec hook watches the pod it made until its container
	// runs, then runs in it: --exec-hooks is enough for both.
	c.create(t, &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "restore-hooks", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{
		BackupName: "hooks-allowed", NamespaceMapping: map[string]string{"hooked": "hooked-copy"}, Hooks: promote}})
	eventually(t, "the restored pod", time.Minute, func() (bool, string) {
		return c.client.Get(context.Background(), client.ObjectKey{Namespace: "hooked-copy", Name: "db"}, &corev1.Pod{}) == nil, "not restored"
	})
	node.Run(t, c.restConfig, "hooked-copy", "db")
	if rs := c.waitRestore(t, "restore-hooks", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed); rs.Status.Phase != salvorv1.RestorePhaseCompleted ||
		rs.Status.HookStatus == nil || rs.Status.HookStatus.HooksAttempted != 1 || rs.Status.HookStatus.HooksFailed != 0 || containerFile(node, "hooked-copy", "db", "db", "promoted") != "promoted" {
		t.Errorf("a restore's exec hook, with --exec-hooks: %s %+v\n%s", rs.Status.Phase, rs.Status.HookStatus, c.mustSalvor(t, "restore", "describe", "restore-hooks", "--details"))
	}

	if out := words(c.mustSalvor(t, "restore", "get", "-o", "wide")); !strings.Contains(out, "rbac:rbac2") {
		t.Errorf("restore get -o wide: %s", out)
	}
	w := widget("rbac2", "w1", 0)
	if err := c.client.Get(context.Background(), client.ObjectKeyFromObject(w), w); err != nil {
		t.Errorf("custom resource restored with the installed RBAC: %v", err)
	}

	// `salvor version` as a viewer: the server answers with its build and plugins.
	c.create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "carol", Namespace: "salvor"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "salvor-viewer"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "carol", Namespace: "salvor"}}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "carol", Namespace: "salvor"}})
	version := words(c.asServiceAccount(t, "salvor", "carol").mustSalvor(t, "version"))
	for _, w := range []string{"Client: Version:", "Server: Version:", "Plugins: "} {
		if !strings.Contains(version, w) {
			t.Errorf("salvor version lacks %q: %s", w, version)
		}
	}
	if strings.Contains(version, "Plugins: 0") {
		t.Errorf("the server reports no plugins: %s", version)
	}
	// Which ones: `salvor plugin get` (and Velero's `get plugins`) as the viewer.
	carol := c.asServiceAccount(t, "salvor", "carol")
	if table := words(carol.mustSalvor(t, "plugin", "get")); !strings.Contains(table, "NAME KIND") ||
		!strings.Contains(table, "salvor.dev/s3 ObjectStore") || !strings.Contains(table, "salvor.dev/filesystem ObjectStore") {
		t.Errorf("salvor plugin get: %s", table)
	}
	var plugins []salvorv1.PluginInfo
	if err := json.Unmarshal([]byte(carol.mustSalvor(t, "get", "plugins", "-o", "json")), &plugins); err != nil {
		t.Fatalf("salvor get plugins -o json: %v", err)
	}
	if !slices.Contains(plugins, salvorv1.PluginInfo{Name: "salvor.dev/csi", Kind: "BackupItemActionV2"}) ||
		!slices.IsSortedFunc(plugins, func(a, b salvorv1.PluginInfo) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("salvor get plugins -o json: %+v", plugins)
	}

	// Metrics: only for callers the API server authorizes.
	url := "https://" + metricsAddr + "/metrics"
	if code, _ := fetch(t, url, ""); code != http.StatusUnauthorized {
		t.Errorf("metrics without a token: %d, want 401", code)
	}
	if code, _ := fetch(t, url, c.token(t, "salvor", "salvor")); code != http.StatusForbidden {
		t.Errorf("metrics with a token not allowed to read them: %d, want 403", code)
	}
	reader := c.metricsReader(t)
	// Three backups Completed (rbac, promoted, hooks-allowed), one
	// PartiallyFailed (annotated-hook); two restores Completed (rbac,
	// restore-hooks), one PartiallyFailed (promoted-denied). The dashboard and alerts of deploy/monitoring use metrics this server
	// serves; those of schedules, plugin operations and plugin restarts
	// appear once there is one (this run has none).
	used, err := monitoring.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`salvor_backups_total{namespace="salvor",phase="Completed"} 3`, `salvor_backups_total{namespace="salvor",phase="PartiallyFailed"} 1`, `salvor_restores_total{namespace="salvor",phase="Completed"} 2`, `salvor_restores_total{namespace="salvor",phase="PartiallyFailed"} 1`,
		`salvor_backup_verifications_total{kind="integrity",outcome="Passed"} 1`, `salvor_backup_verifications_total{kind="test-restore",outcome="Failed"} 1`,
		"salvor_build_info{", `salvor_location_available{location="default"} 1`}
	for _, m := range used {
		if !strings.HasPrefix(m, "salvor_schedule_") && !strings.HasPrefix(m, "salvor_operation") && m != "salvor_plugin_restarts_total" {
			want = append(want, "\n"+m+"{")
		}
	}
	// The counters move just after the status a client waits on, so the
	// scrape is repeated until they are there (or the deadline says which
	// is missing).
	eventually(t, "the metrics deploy/monitoring uses, served to the reader after a backup and a restore", time.Minute, func() (bool, string) {
		code, body := fetch(t, url, reader)
		if code != http.StatusOK {
			return false, fmt.Sprint(code)
		}
		for _, w := range want {
			if !strings.Contains(body, w) && !strings.Contains(body, strings.TrimSuffix(w, "{")+" ") {
				name, _, _ := strings.Cut(strings.TrimSpace(w), "{")
				return false, "missing " + strings.TrimSpace(w) + "; the server has:\n" + linesWith(body, name+"{", name+" ")
			}
		}
		return true, ""
	})

	// Readiness is real: a server whose account cannot even list Salvor's
	// objects never becomes ready, and says why in its log.
	c.create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody", Namespace: "salvor"}})
	nobodyHealth := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	nobody := c.asServiceAccount(t, "salvor", "nobody").startServer(t, "--health-address", nobodyHealth)
	eventually(t, "the unprivileged server's readiness probe answering", time.Minute, func() (bool, string) {
		code, body := fetch(t, "http://"+nobodyHealth+"/readyz", "")
		return code != 0, body
	})
	nobody.waitLog(t, "has not synced")
	if code, body := fetch(t, "http://"+nobodyHealth+"/readyz", ""); code != http.StatusInternalServerError {
		t.Errorf("a server that cannot list its objects is ready: %d %s", code, body)
	}
	if code, _ := fetch(t, "http://"+healthAddr+"/readyz", ""); code != http.StatusOK {
		t.Errorf("the installed server is no longer ready: %d", code)
	}
}

// syncBuffer is a bytes.Buffer a subprocess writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// linesWith are the lines of s that begin with any of prefixes.
func linesWith(s string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestUninstallCommand: `salvor uninstall` asks first; it removes the
// server, its roles and Salvor's namespace, and the CRDs and shared roles
// only once no other namespace holds Salvor's objects; every backup stays
// whole in its location, even with a server still running.
func TestUninstallCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups", "vault")
	c.mustSalvor(t, "install", "--provider", "salvor.dev/s3", "--bucket", "backups", "--secret-file", minio.CredentialsFile(t),
		"--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true")
	c.asServiceAccount(t, "salvor", "salvor").startServer(t)
	cfg := map[string]string{"bucket": "backups", "region": "minio", "s3Url": minio.Endpoint, "s3ForcePathStyle": "true", "credentialsFile": minio.CredentialsFile(t)}
	c.waitLocation(t, "default", salvorv1.BackupStorageLocationPhaseAvailable)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "app"}, Data: map[string]string{"k": "v"}})
	c.mustSalvor(t, "backup", "create", "b", "--include-namespaces", "app", "--wait")
	store := openStore(t, cfg)
	whole := func() bool {
		ok, err := store.IsWhole(ctx, "b")
		return ok && err == nil
	}
	// Another installation's object, in another namespace.
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
		&salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "other"},
			Spec: salvorv1.BackupStorageLocationSpec{Provider: "salvor.dev/s3", ObjectStorage: salvorv1.ObjectStorageLocation{Bucket: "theirs"}}})

	asked := c.command("--kubeconfig", c.kubeconfig, "uninstall")
	asked.Stdin = strings.NewReader("n\n")
	if out, err := asked.CombinedOutput(); err == nil || !strings.Contains(string(out), "Remove Salvor from namespace salvor? Its backups stay in their locations. [y/N]") ||
		!strings.Contains(string(out), "not uninstalled") {
		t.Fatalf("uninstall answered no: %v\n%s", err, out)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "salvor"}, &appsv1.Deployment{}); err != nil {
		t.Fatalf("uninstall answered no removed the server's Deployment: %v", err)
	}

	// An encrypted location whose keys the server made and nobody has
	// saved yet: uninstalling would lose its backups for good.
	// In a bucket of its own: inside the default location's (at the root of
	// backups) it would be refused.
	c.mustSalvor(t, "backup-location", "create", "vault", "--provider", "salvor.dev/s3", "--bucket", "vault", "--prefix", "sealed",
		"--encryption-key-secret", "backup-keys", "--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true,credentialsFile="+minio.CredentialsFile(t))
	c.waitLocation(t, "vault", salvorv1.BackupStorageLocationPhaseAvailable)
	if out, err := c.salvor(t, "uninstall", "--force"); err == nil || !strings.Contains(out, "the keys of encrypted location vault (Secret salvor/backup-keys) are not saved outside the cluster") {
		t.Fatalf("uninstall with unsaved keys: %v\n%s", err, out)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "salvor"}, &appsv1.Deployment{}); err != nil {
		t.Fatalf("an uninstall refused for unsaved keys removed the server's Deployment: %v", err)
	}
	keys := &corev1.Secret{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "backup-keys"}, keys); err != nil {
		t.Fatal(err)
	}
	delete(keys.Annotations, salvorv1.KeyNotSavedAnnotation) // saved, says the user
	if err := c.client.Update(ctx, keys); err != nil {
		t.Fatal(err)
	}

	out := c.mustSalvor(t, "uninstall", "--force")
	for _, w := range []string{"Deployment salvor/salvor deleted.",
		"The keys of the encrypted locations vault (Secret backup-keys) went with the namespace: their backups are readable only with the copies you saved.", "ClusterRole salvor-server-salvor deleted.", "Namespace salvor deleted.",
		"Salvor's CRDs and the roles salvor-viewer, salvor-operator, salvor-metrics-reader, salvor-tenant are kept: namespaces other hold Salvor's objects too.",
		"Salvor is uninstalled from salvor. No backup was deleted: each stays in its location, for a Salvor or Velero pointed there to find again: default (salvor.dev/s3 backups/), vault (salvor.dev/s3 vault/sealed)."} {
		if !strings.Contains(out, w) {
			t.Errorf("uninstall did not say %q:\n%s", w, out)
		}
	}
	b := &salvorv1.Backup{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "b"}, b); err != nil || len(b.Finalizers) != 0 {
		t.Errorf("backup b after uninstall: finalizers %v, %v", b.Finalizers, err)
	}
	ns := &corev1.Namespace{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "salvor"}, ns); err != nil || ns.DeletionTimestamp == nil {
		t.Errorf("namespace salvor is not being deleted: %v", err)
	}
	for _, o := range []client.Object{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "salvor-server-salvor"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "salvor-server-salvor"}}} {
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s after uninstall: %v", o, o.GetName(), err)
		}
	}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "salvor-viewer"}, &rbacv1.ClusterRole{}); err != nil {
		t.Errorf("the shared role salvor-viewer went while another namespace uses Salvor: %v", err)
	}
	// What the namespace controller does (this control plane has none):
	// Backup b goes, as an object only.
	if err := c.client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	if !whole() {
		t.Fatal("uninstall deleted backup b's files")
	}

	// The last installation goes: so do the CRDs and the shared roles. A
	// request a CLI left in another namespace marks no installation.
	c.deleteForGood(t, &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "other"}})
	c.create(t, &salvorv1.ServerStatusRequest{ObjectMeta: metav1.ObjectMeta{Name: "left", Namespace: "other"}})
	out = c.mustSalvor(t, "uninstall", "--force")
	if !strings.Contains(out, "CustomResourceDefinition backups.salvor.dev deleted.") || !strings.Contains(out, "ClusterRole salvor-viewer deleted.") {
		t.Errorf("the last uninstall:\n%s", out)
	}
	eventually(t, "Salvor's CRDs gone", time.Minute, func() (bool, string) {
		list := &apiextv1.CustomResourceDefinitionList{}
		if err := c.client.List(ctx, list); err != nil {
			return false, err.Error()
		}
		var left []string
		for _, d := range list.Items {
			if d.Spec.Group == "salvor.dev" {
				left = append(left, d.Name)
			}
		}
		return len(left) == 0, fmt.Sprint(left)
	})
	if !whole() {
		t.Fatal("uninstall deleted backup b's files")
	}
}

// TestInstallAndUninstallWait: `salvor install --wait` (Velero's) returns
// once the server's Deployment has rolled out and is available, and fails,
// saying what it waits for, when it is not within --timeout; with
// --crds-only it waits for the CRDs. `salvor uninstall --wait` returns once
// the namespace (emptied by the cluster's namespace controller) and the CRDs
// are gone, so an install right after it starts afresh.
func TestInstallAndUninstallWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startCluster(t)
	testbed.StartCSI(t, c.kubeconfig, c.restConfig) // for its namespace controller

	if out := c.mustSalvor(t, "install", "--crds-only", "--wait"); !strings.Contains(out, "CRDs are established.") {
		t.Errorf("install --crds-only --wait:\n%s", out)
	}

	install := c.command("--kubeconfig", c.kubeconfig, "install", "--wait", "--timeout", "5m")
	var out bytes.Buffer
	install.Stdout, install.Stderr = &out, &out
	if err := install.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- install.Wait() }()
	d := &appsv1.Deployment{}
	eventually(t, "the server's Deployment", time.Minute, func() (bool, string) {
		err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "salvor"}, d)
		return err == nil, fmt.Sprint(err)
	})
	eventually(t, "install waiting", time.Minute, func() (bool, string) {
		return strings.Contains(out.String(), "Waiting for Deployment salvor/salvor to be available"), out.String()
	})
	select {
	case err := <-done:
		t.Fatalf("install --wait returned before the Deployment was available: %v\n%s", err, out.String())
	default:
	}
	// What the deployment controller and the kubelet would write (this
	// control plane runs no pods).
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}}}
	if err := c.client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || !strings.Contains(out.String(), "Deployment salvor/salvor is available.") {
		t.Fatalf("install --wait: %v\n%s", err, out.String())
	}

	// A changed spec the deployment controller has not seen: not ready.
	if out, err := c.salvor(t, "install", "--wait", "--timeout", "3s", "--replicas", "2"); err == nil ||
		!strings.Contains(out, "the server's Deployment salvor/salvor is not ready: its newest spec is not yet seen by the deployment controller") {
		t.Errorf("install --wait of a Deployment not rolled out: %v\n%s", err, out)
	}
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
		t.Fatal(err)
	}
	d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas = d.Generation, 2, 2
	if err := c.client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	if out, err := c.salvor(t, "install", "--wait", "--timeout", "3s", "--replicas", "2"); err == nil || !strings.Contains(out, "1 of 2 replicas available") {
		t.Errorf("install --wait with one of two replicas available: %v\n%s", err, out)
	}

	out.Reset()
	uninstall := c.mustSalvor(t, "uninstall", "--force", "--wait")
	for _, w := range []string{"Namespace salvor is gone.", "CustomResourceDefinition backups.salvor.dev is gone."} {
		if !strings.Contains(uninstall, w) {
			t.Errorf("uninstall --wait did not say %q:\n%s", w, uninstall)
		}
	}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "salvor"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace salvor after uninstall --wait: %v", err)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "backups.salvor.dev"}, &apiextv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
		t.Errorf("CRD backups.salvor.dev after uninstall --wait: %v", err)
	}
	// And an install right after starts afresh.
	c.mustSalvor(t, "install")
}

// TestPluginAddAndRemove: `salvor plugin add IMAGE` and `plugin remove`
// (Velero's) change the plugin images the server's Deployment copies its
// plugins from, as install --plugins makes them; an image already there,
// one not there and a bad pull policy are refused, changing nothing.
func TestPluginAddAndRemove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startCluster(t)
	c.mustSalvor(t, "install", "--plugins", "example.io/a:1")
	inits := func() string {
		t.Helper()
		d := &appsv1.Deployment{}
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "salvor"}, d); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ic := range d.Spec.Template.Spec.InitContainers {
			if len(ic.VolumeMounts) != 1 || ic.VolumeMounts[0].Name != "plugins" || ic.VolumeMounts[0].MountPath != "/target" {
				t.Errorf("init container %s mounts %v, not the plugin directory at /target", ic.Name, ic.VolumeMounts)
			}
			out = append(out, fmt.Sprintf("%s=%s/%s", ic.Name, ic.Image, ic.ImagePullPolicy))
		}
		return strings.Join(out, " ")
	}
	if out := c.mustSalvor(t, "plugin", "add", "example.io/b:2", "--image-pull-policy", "Always"); !strings.Contains(out, "Plugin image example.io/b:2 added to Deployment salvor/salvor (init container plugin-1)") {
		t.Errorf("plugin add:\n%s", out)
	}
	if got := inits(); got != "plugin-0=example.io/a:1/IfNotPresent plugin-1=example.io/b:2/Always" {
		t.Errorf("after plugin add: %s", got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plugin", "add", "example.io/b:2"}, "plugin image example.io/b:2 is already in Deployment salvor/salvor (init container plugin-1)"},
		{[]string{"plugin", "add", "example.io/c:3", "--image-pull-policy", "Sometimes"}, `--image-pull-policy "Sometimes": want Always, IfNotPresent or Never`},
		{[]string{"plugin", "remove", "example.io/z:9"}, "no plugin image or init container example.io/z:9 in Deployment salvor/salvor; it has plugin-0 (example.io/a:1), plugin-1 (example.io/b:2)"},
		{[]string{"plugin", "add", "example.io/c:3", "-n", "elsewhere"}, "no Salvor server Deployment in namespace elsewhere"},
	} {
		if out, err := c.salvor(t, tc.args...); err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("salvor %s: %v, want %q\n%s", strings.Join(tc.args, " "), err, tc.want, out)
		}
	}
	if got := inits(); got != "plugin-0=example.io/a:1/IfNotPresent plugin-1=example.io/b:2/Always" {
		t.Errorf("refused commands changed the plugins: %s", got)
	}
	c.mustSalvor(t, "plugin", "remove", "example.io/a:1")
	c.mustSalvor(t, "plugin", "add", "example.io/c:3")
	if got := inits(); got != "plugin-1=example.io/b:2/Always plugin-0=example.io/c:3/IfNotPresent" {
		t.Errorf("after removing a:1 and adding c:3: %s", got)
	}
	if out := c.mustSalvor(t, "plugin", "remove", "plugin-1"); !strings.Contains(out, "Plugin image example.io/b:2 removed from Deployment salvor/salvor (init container plugin-1)") {
		t.Errorf("plugin remove by container name:\n%s", out)
	}
	if got := inits(); got != "plugin-0=example.io/c:3/IfNotPresent" {
		t.Errorf("after removing plugin-1: %s", got)
	}
}
