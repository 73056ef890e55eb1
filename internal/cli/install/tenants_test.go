package install

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestTenantRoleAndRequester installs the tenant objects on a real API
// server (RBAC on, the admission policies run by the server itself),
// binds salvor-tenant to alice in team-a, and checks by
// SubjectAccessReview that the role grants what a tenant uses in its
// namespace and nothing in another, cluster-wide or beyond Salvor's
// objects; then that the API server writes who created a tenant's object
// over a forged claim, refuses changing it afterwards, and leaves the
// server's namespace and the server's own creates alone.
func TestTenantRoleAndRequester(t *testing.T) {
	cfg := testbed.ControlPlane(t)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := salvorv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	as := func(user string, groups ...string) client.Client {
		c := rest.CopyConfig(cfg)
		if user != "" {
			c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
		}
		cl, err := client.New(c, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	ctx := context.Background()
	admin := as("")
	for _, ns := range []string{"salvor", "team-a", "team-b"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range TenantObjects("salvor", "salvor", map[string]string{"app.kubernetes.io/name": "salvor"}) {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	for _, rb := range []*rbacv1.RoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: "team-a"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: TenantRole},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}},
		// The server makes a schedule's backups in the tenant's namespace.
		{ObjectMeta: metav1.ObjectMeta{Name: "server", Namespace: "team-a"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "salvor", Namespace: "salvor"}}},
	} {
		if err := admin.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("the role grants its namespace's backups and nothing else", func(t *testing.T) {
		for _, tc := range []struct {
			attrs authorizationv1.ResourceAttributes
			want  bool
		}{
			{authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Group: "salvor.dev", Resource: "backups"}, true},
			{authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "list", Group: "salvor.dev", Resource: "backups"}, true},
			{authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "patch", Group: "salvor.dev", Resource: "restores"}, true},
			{authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Group: "salvor.dev", Resource: "schedules"}, true},
			{authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Group: "salvor.dev", Resource: "downloadrequests"}, true},
			{authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "watch", Group: "salvor.dev", Resource: "volumepluginbackups"}, true},
			// another tenant's namespace, the server's, every namespace
			{authorizationv1.ResourceAttributes{Namespace: "team-b", Verb: "create", Group: "salvor.dev", Resource: "backups"}, false},
			{authorizationv1.ResourceAttributes{Namespace: "team-b", Verb: "get", Group: "salvor.dev", Resource: "backups"}, false},
			{authorizationv1.ResourceAttributes{Namespace: "team-b", Verb: "create", Group: "salvor.dev", Resource: "downloadrequests"}, false},
			{authorizationv1.ResourceAttributes{Namespace: "salvor", Verb: "list", Group: "salvor.dev", Resource: "backups"}, false},
			{authorizationv1.ResourceAttributes{Verb: "list", Group: "salvor.dev", Resource: "backups"}, false},
			// in its namespace, what is not a tenant's
			{authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "delete", Group: "salvor.dev", Resource: "backups"}, false},
			{authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "update", Group: "salvor.dev", Resource: "backups", Subresource: "status"}, false},
			{authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Group: "salvor.dev", Resource: "backupstoragelocations"}, false},
			{authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "get", Group: "salvor.dev", Resource: "backuprepositories"}, false},
			{authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Group: "salvor.dev", Resource: "datauploads"}, false},
			{authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "get", Resource: "secrets"}, false},
			{authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Resource: "pods"}, false},
			{authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}, false},
			{authorizationv1.ResourceAttributes{Verb: "create", Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"}, false},
		} {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &tc.attrs}}
			if err := admin.Create(ctx, sar); err != nil {
				t.Fatal(err)
			}
			if sar.Status.Allowed != tc.want {
				t.Errorf("alice may %s %s/%s in %q: %v, want %v", tc.attrs.Verb, tc.attrs.Resource, tc.attrs.Subresource, tc.attrs.Namespace, sar.Status.Allowed, tc.want)
			}
		}
	})

	alice := as("alice", "team-a-devs", "system:authenticated")
	forged := map[string]string{salvorv1.RequestedByAnnotation: "platform-admin", salvorv1.RequestedByGroupsAnnotation: "system:masters"}
	backup := func(ns, name string, annotations map[string]string) *salvorv1.Backup {
		return &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations}}
	}
	// The API server starts running a new policy within moments of its
	// creation; until then a tenant's create goes through unmarked, so
	// wait for the first marked one.
	made := &salvorv1.Backup{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		b := backup("team-a", "", forged)
		b.GenerateName = "nightly-"
		// For a few seconds after a CRD is made, the API server refuses
		// what a mutating policy matches of it, not yet knowing its schema.
		if err := alice.Create(ctx, b); err != nil && strings.Contains(err.Error(), "There can be a delay between when CustomResourceDefinitions are created") {
			return false, nil
		} else if err != nil {
			return false, err
		}
		made = b
		return b.Annotations[salvorv1.RequestedByAnnotation] == "alice", nil
	})
	if err != nil {
		t.Fatalf("no backup alice made was marked with her name: %v (last: %v)", err, made.Annotations)
	}
	if got := made.Annotations[salvorv1.RequestedByGroupsAnnotation]; got != "team-a-devs\nsystem:authenticated" {
		t.Errorf("groups recorded: %q, want alice's", got)
	}

	// The validating policy starts running on its own schedule, after the
	// mutating one may have: wait until it refuses a change, on a backup
	// of its own (a change let through alters that one only).
	probe := backup("team-a", "probe", nil)
	if err := alice.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	attempt := 0
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		attempt++
		b := probe.DeepCopy()
		patch := client.MergeFrom(probe.DeepCopy())
		b.Annotations[salvorv1.RequestedByAnnotation] = fmt.Sprintf("probe-%d", attempt)
		err := alice.Patch(ctx, b, patch)
		if err == nil {
			probe = b
		}
		return apierrors.IsForbidden(err), nil
	})
	if err != nil {
		t.Fatalf("the policy never refused changing a backup's requester: %v", err)
	}

	t.Run("the requester cannot be changed afterwards", func(t *testing.T) {
		for _, change := range []map[string]string{
			{salvorv1.RequestedByAnnotation: "platform-admin"},
			{salvorv1.RequestedByGroupsAnnotation: "system:masters"},
		} {
			b := made.DeepCopy()
			patch := client.MergeFrom(b.DeepCopy())
			for k, v := range change {
				b.Annotations[k] = v
			}
			err := alice.Patch(ctx, b, patch)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cannot be changed") {
				t.Errorf("alice changing %v: %v, want it refused saying the requester cannot be changed", change, err)
			}
		}
		b := made.DeepCopy()
		patch := client.MergeFrom(b.DeepCopy())
		delete(b.Annotations, salvorv1.RequestedByAnnotation)
		if err := admin.Patch(ctx, b, patch); !apierrors.IsForbidden(err) {
			t.Errorf("an administrator removing the requester: %v, want it refused", err)
		}
		// Other changes go through, and keep the requester.
		b = made.DeepCopy()
		patch = client.MergeFrom(b.DeepCopy())
		b.Annotations["salvor.dev/cancel"] = "true"
		if err := alice.Patch(ctx, b, patch); err != nil {
			t.Fatalf("alice annotating her backup: %v", err)
		}
		if b.Annotations[salvorv1.RequestedByAnnotation] != "alice" {
			t.Errorf("after another change the requester is %q", b.Annotations[salvorv1.RequestedByAnnotation])
		}
	})

	t.Run("another namespace is refused by RBAC", func(t *testing.T) {
		if err := alice.Create(ctx, backup("team-b", "nightly", nil)); !apierrors.IsForbidden(err) {
			t.Errorf("alice creating a backup in team-b: %v, want forbidden", err)
		}
	})

	t.Run("the server's namespace and the server's own creates are left alone", func(t *testing.T) {
		b := backup("salvor", "everything", map[string]string{salvorv1.RequestedByAnnotation: "someone"})
		if err := admin.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		if b.Annotations[salvorv1.RequestedByAnnotation] != "someone" || b.Annotations[salvorv1.RequestedByGroupsAnnotation] != "" {
			t.Errorf("a backup in the server's namespace got annotations %v", b.Annotations)
		}
		server := as("system:serviceaccount:salvor:salvor", "system:serviceaccounts", "system:serviceaccounts:salvor", "system:authenticated")
		b = backup("team-a", "nightly-from-schedule", map[string]string{salvorv1.RequestedByAnnotation: "alice", salvorv1.RequestedByGroupsAnnotation: "team-a-devs"})
		if err := server.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		if b.Annotations[salvorv1.RequestedByAnnotation] != "alice" || b.Annotations[salvorv1.RequestedByGroupsAnnotation] != "team-a-devs" {
			t.Errorf("a backup the server made for alice's schedule got annotations %v", b.Annotations)
		}
	})
}
