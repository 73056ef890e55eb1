package e2e

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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/podvolume"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestTenantsBackUpAndRestoreTheirOwnNamespaces installs Salvor with
// --tenants, opens the location to namespaces labelled as tenants, and
// runs the server with its installed rights. Two teams, each a service
// account's token bound to salvor-tenant in its namespace and nothing
// more (alice may read config maps, not Secrets), back up and restore
// their own namespaces through the CLI; every escape tried is refused
// saying why and makes nothing.
func TestTenantsBackUpAndRestoreTheirOwnNamespaces(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.mustSalvor(t, "install", "--tenants", "--provider", "salvor.dev/s3", "--bucket", "backups", "--secret-file", minio.CredentialsFile(t),
		"--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true")
	c.mustSalvor(t, "backup-location", "set", "default", "--tenant-selector", "salvor.dev/tenant")
	ctx := context.Background()
	for _, team := range []string{"team-a", "team-b"} {
		c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team, Labels: map[string]string{"salvor.dev/tenant": "yes"}}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: team}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dev-salvor", Namespace: team},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "salvor-tenant"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "dev", Namespace: team}}},
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: team},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "patch"}}}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dev-config", Namespace: team},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "config"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "dev", Namespace: team}}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: team}, Data: map[string]string{"team": team}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "password", Namespace: team}, StringData: map[string]string{"p": "hunter2"}})
	}
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "platform"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "crown-jewels", Namespace: "platform"}})
	// What --tenants adds to the server's rights in a team's namespace:
	// what it uses (the rest of the test shows it is enough), no more.
	c.checkRights(t, "salvor", "salvor", []right{
		{authorizationv1.ResourceAttributes{Verb: "watch", Group: "salvor.dev", Resource: "schedules", Namespace: "team-a"}, true},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "salvor.dev", Resource: "schedules", Subresource: "status", Namespace: "team-a"}, true},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "salvor.dev", Resource: "backups", Namespace: "team-a"}, true},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "salvor.dev", Resource: "restores", Subresource: "status", Namespace: "team-a"}, true},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "salvor.dev", Resource: "schedules", Namespace: "team-a"}, false},
		{authorizationv1.ResourceAttributes{Verb: "delete", Group: "salvor.dev", Resource: "schedules", Namespace: "team-a"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "salvor.dev", Resource: "restores", Namespace: "team-a"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "salvor.dev", Resource: "downloadrequests", Namespace: "team-a"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "salvor.dev", Resource: "backupstoragelocations", Namespace: "team-a"}, false},
	})
	c.asServiceAccount(t, "salvor", "salvor").startServer(t, "--tenants", "--item-operation-sync-frequency", "1s")
	c.waitLocation(t, "default", salvorv1.BackupStorageLocationPhaseAvailable)
	alice, bob := c.asServiceAccount(t, "team-a", "dev"), c.asServiceAccount(t, "team-b", "dev")

	waitRequesterPolicy(t, alice, "team-a")
	alice.mustSalvor(t, "-n", "team-a", "backup", "create", "nightly", "--wait")
	b := &salvorv1.Backup{}
	if err := alice.client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "nightly"}, b); err != nil {
		t.Fatal(err)
	}
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Annotations[salvorv1.RequestedByAnnotation] != "system:serviceaccount:team-a:dev" {
		t.Fatalf("alice's backup: phase %s, annotations %v, errors %v", b.Status.Phase, b.Annotations, b.Status.ValidationErrors)
	}
	if left := b.Annotations["salvor.dev/left-out-for-requester"]; !strings.Contains(left, "secrets") || strings.Contains(left, "configmaps") {
		t.Errorf("left out of alice's backup as she may not read them: %q, want secrets and not configmaps", left)
	}
	// What the server wrote: team-a's config map, not its Secret, nothing of another namespace.
	copyOf := &salvorv1.Backup{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "team-a.nightly"}, copyOf); err != nil {
		t.Fatal(err)
	}
	if out := c.mustSalvor(t, "backup", "describe", "team-a.nightly", "--details"); !strings.Contains(out, "team-a/settings") ||
		strings.Contains(out, "password") || strings.Contains(out, "team-b") || strings.Contains(out, "crown-jewels") {
		t.Errorf("the server's copy of alice's backup holds:\n%s", out)
	}
	// Alice reads her backup's log through the CLI.
	if out := alice.mustSalvor(t, "-n", "team-a", "backup", "logs", "nightly"); !strings.Contains(out, "team-a.nightly") {
		t.Errorf("alice's backup log:\n%s", out)
	}

	// Escapes: refused saying why, nothing made.
	for _, tc := range []struct {
		who  *cluster
		args []string
		want string
	}{
		{alice, []string{"-n", "team-a", "backup", "create", "grab-b", "--include-namespaces", "team-b"}, `includedNamespaces names "team-b"`},
		{alice, []string{"-n", "team-a", "backup", "create", "grab-all", "--include-namespaces", "*"}, `includedNamespaces names "*"`},
		{alice, []string{"-n", "team-a", "backup", "create", "grab-cluster", "--include-cluster-resources"}, "includeClusterResources is true"},
		{alice, []string{"-n", "team-a", "backup", "create", "grab-secrets", "--include-resources", "secrets"}, "may not list in namespace team-a"},
		{alice, []string{"-n", "team-a", "restore", "create", "move-out", "--from-backup", "nightly", "--namespace-mappings", "team-a:platform"}, `namespaceMapping maps "team-a" to "platform"`},
	} {
		name := tc.args[4]
		out, err := tc.who.salvor(t, append(tc.args, "--wait")...)
		if err == nil || !strings.Contains(out, "FailedValidation") {
			t.Errorf("salvor %s: %v, want it refused:\n%s", strings.Join(tc.args, " "), err, out)
		}
		// The team reads why as the CLI says to.
		if out, err := tc.who.salvor(t, "-n", "team-a", tc.args[2], "describe", name); err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("salvor %s describe %s: %v, want it saying %q:\n%s", tc.args[2], name, err, tc.want, out)
		}
		for _, o := range []client.Object{&salvorv1.Backup{}, &salvorv1.Restore{}} {
			if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "team-a." + name}, o); !apierrors.IsNotFound(err) {
				t.Errorf("refused %s: the server's namespace holds %T team-a.%s (%v)", name, o, name, err)
			}
		}
	}
	// Bob sees none of alice's, and may not ask for her logs.
	if out, err := bob.salvor(t, "-n", "team-a", "backup", "get"); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("bob listing team-a's backups: %v\n%s", err, out)
	}
	if out, err := bob.salvor(t, "-n", "team-b", "backup", "logs", "nightly"); err == nil {
		t.Errorf("bob reading the log of a backup of team-a's name from team-b: %s", out)
	}
	for _, args := range [][]string{{"-n", "team-a", "backup", "logs", "nightly"}, {"-n", "team-a", "backup", "describe", "nightly"}} {
		if out, err := bob.salvor(t, args...); err == nil || !strings.Contains(out, "forbidden") {
			t.Errorf("bob: salvor %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Nor by naming the server's copy of alice's backup from his namespace.
	peek := &salvorv1.DownloadRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "peek"},
		Spec: salvorv1.DownloadRequestSpec{Target: salvorv1.DownloadTarget{Kind: salvorv1.DownloadTargetBackupLog, Name: "team-a.nightly"}}}
	if err := bob.client.Create(ctx, peek); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bob's download of alice's backup's copy refused", time.Minute, func() (bool, string) {
		if err := bob.client.Get(ctx, client.ObjectKeyFromObject(peek), peek); err != nil {
			return false, err.Error()
		}
		return peek.Status.Phase == salvorv1.DownloadRequestPhaseFailed && peek.Status.DownloadURL == "" &&
			strings.Contains(peek.Status.Message, `backup "team-a.nightly" does not exist in namespace team-b`), fmt.Sprint(peek.Status)
	})
	// A forged requester is the API server's to write, not the client's.
	forged := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "forged",
		Annotations: map[string]string{salvorv1.RequestedByAnnotation: "system:serviceaccount:salvor:salvor"}}}
	if err := bob.client.Create(ctx, forged); err != nil {
		t.Fatal(err)
	}
	if got := forged.Annotations[salvorv1.RequestedByAnnotation]; got != "system:serviceaccount:team-b:dev" {
		t.Errorf("bob's backup claiming the server made it is recorded as %q's", got)
	}

	// Alice loses her config map and restores it; the Secret she may not
	// make is not in her backup.
	if err := c.client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	out := alice.mustSalvor(t, "-n", "team-a", "restore", "create", "back", "--from-backup", "nightly", "--wait")
	cm := &corev1.ConfigMap{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "settings"}, cm); err != nil || cm.Data["team"] != "team-a" {
		t.Errorf("alice's config map after her restore: %v %v\n%s", cm.Data, err, out)
	}
	r := &salvorv1.Restore{}
	if err := alice.client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "back"}, r); err != nil || r.Status.Phase != salvorv1.RestorePhaseCompleted {
		t.Errorf("alice's restore: %s %v", r.Status.Phase, err)
	}
	if out, err := alice.salvor(t, "-n", "team-a", "restore", "logs", "back"); err != nil || !strings.Contains(out, "team-a") {
		t.Errorf("alice's restore log: %v\n%s", err, out)
	}
	// Bob backs up his own namespace alongside, and restores it.
	if out, err := bob.salvor(t, "-n", "team-b", "backup", "create", "nightly", "--wait"); err != nil {
		t.Errorf("bob's backup: %v\n%s", err, out)
	}
	if err := c.client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "team-b"}}); err != nil {
		t.Fatal(err)
	}
	bob.mustSalvor(t, "-n", "team-b", "restore", "create", "back", "--from-backup", "nightly", "--wait")
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: "settings"}, cm); err != nil || cm.Data["team"] != "team-b" {
		t.Errorf("bob's config map after his restore: %v %v", cm.Data, err)
	}
	// Bob's schedule runs in his namespace, as his: its backups are his
	// requests, judged as they run; its retention keeps the newest,
	// deleting the older backup by its copy in the server's namespace.
	bob.mustSalvor(t, "-n", "team-b", "schedule", "create", "often", "--schedule", "@every 15s", "--keep-last", "1")
	var first *salvorv1.Backup
	eventually(t, "bob's schedule's first backup Completed, then dropped by its retention for a newer one", 3*time.Minute, func() (bool, string) {
		list := &salvorv1.BackupList{}
		if err := bob.client.List(ctx, list, client.InNamespace("team-b"), client.MatchingLabels{salvorv1.ScheduleNameLabel: "often"}); err != nil {
			return false, err.Error()
		}
		var seen []string
		firstThere, newer := false, false
		for _, b := range list.Items {
			seen = append(seen, b.Name+":"+string(b.Status.Phase))
			if first == nil && b.Status.Phase == salvorv1.BackupPhaseCompleted {
				first = b.DeepCopy()
			}
			if first != nil && b.Name == first.Name {
				firstThere = true
			} else if first != nil && b.Status.Phase == salvorv1.BackupPhaseCompleted {
				newer = true
			}
		}
		return first != nil && !firstThere && newer, fmt.Sprint(seen)
	})
	if got := first.Annotations[salvorv1.RequestedByAnnotation]; got != "system:serviceaccount:team-b:dev" {
		t.Errorf("bob's scheduled backup %s is recorded as %q's", first.Name, got)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "team-b." + first.Name}, &salvorv1.Backup{}); !apierrors.IsNotFound(err) {
		t.Errorf("the copy of the backup bob's retention dropped: %v, want it deleted", err)
	}
	if out := bob.mustSalvor(t, "-n", "team-b", "schedule", "describe", "often"); !strings.Contains(out, "Enabled") {
		t.Errorf("bob's schedule:\n%s", out)
	}
	bob.mustSalvor(t, "-n", "team-b", "schedule", "pause", "often")
	eventually(t, "bob's paused schedule's backups finished", time.Minute, func() (bool, string) {
		list := &salvorv1.BackupList{}
		if err := c.client.List(ctx, list, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.TenantNamespaceLabel: "team-b"}); err != nil {
			return false, err.Error()
		}
		for _, b := range list.Items {
			if !finished(b.Status.Phase) {
				return false, b.Name + " " + string(b.Status.Phase)
			}
		}
		return true, ""
	})
	// A schedule that would back up another namespace makes nothing.
	alice.mustSalvor(t, "-n", "team-a", "schedule", "create", "grab", "--schedule", "@every 1h", "--include-namespaces", "team-b")
	eventually(t, "alice's schedule of team-b refused", time.Minute, func() (bool, string) {
		out, _ := alice.salvor(t, "-n", "team-a", "schedule", "describe", "grab")
		return strings.Contains(out, "FailedValidation") && strings.Contains(out, `includedNamespaces names "team-b"`), out
	})
	if list := (&salvorv1.BackupList{}); c.client.List(ctx, list, client.MatchingLabels{salvorv1.ScheduleNameLabel: "grab"}) != nil || len(list.Items) > 0 {
		t.Errorf("alice's refused schedule made backups: %d", len(list.Items))
	}

	// Platform backups shared with the teams they hold: one by its own
	// annotation, then all of the location's. A team lists and restores
	// from them, but reads neither their logs nor what they hold of
	// others.
	c.mustSalvor(t, "backup", "create", "platform-one", "--include-namespaces", "team-a,team-b,platform", "--wait")
	c.mustSalvor(t, "backup", "create", "platform-two", "--include-namespaces", "team-a,platform", "--wait")
	one := &salvorv1.Backup{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "platform-one"}, one); err != nil {
		t.Fatal(err)
	}
	one.Annotations = map[string]string{salvorv1.TenantVisibleAnnotation: "true"}
	if err := c.client.Update(ctx, one); err != nil {
		t.Fatal(err)
	}
	seen := func(who *cluster, ns, name string) (bool, string) {
		out, err := who.salvor(t, "-n", ns, "backup", "get")
		return err == nil && strings.Contains(out, name), out
	}
	for _, w := range []struct {
		who *cluster
		ns  string
	}{{alice, "team-a"}, {bob, "team-b"}} {
		eventually(t, w.ns+" sees platform-one", time.Minute, func() (bool, string) { return seen(w.who, w.ns, "platform-one") })
	}
	if ok, out := seen(alice, "team-a", "platform-two"); ok {
		t.Errorf("team-a sees platform-two, which nothing shares:\n%s", out)
	}
	c.mustSalvor(t, "backup-location", "set", "default", "--share-backups")
	eventually(t, "team-a sees platform-two once the location shares its backups", time.Minute, func() (bool, string) { return seen(alice, "team-a", "platform-two") })
	if ok, out := seen(bob, "team-b", "platform-two"); ok {
		t.Errorf("team-b sees platform-two, which does not hold team-b:\n%s", out)
	}
	if out := alice.mustSalvor(t, "-n", "team-a", "backup", "describe", "platform-two"); !strings.Contains(out, "Completed") || strings.Contains(out, "platform,") || strings.Contains(out, "crown-jewels") {
		t.Errorf("what team-a sees of platform-two:\n%s", out)
	}
	if out, err := alice.salvor(t, "-n", "team-a", "backup", "logs", "platform-two", "--timeout", "30s"); err == nil || !strings.Contains(out, "not offered here") {
		t.Errorf("alice reading platform-two's log: %v\n%s", err, out)
	}
	if err := c.client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	// The platform's backup holds kinds alice may not make (Secrets,
	// service accounts): refused naming them, she restores what she may.
	out, err := alice.salvor(t, "-n", "team-a", "restore", "create", "from-platform", "--from-backup", "platform-two", "--wait")
	if describe, _ := alice.salvor(t, "-n", "team-a", "restore", "describe", "from-platform"); err == nil || !strings.Contains(describe, "the backup holds secrets of namespace team-a") {
		t.Errorf("alice's restore of everything of team-a in platform-two: %v\n%s\n%s", err, out, describe)
	}
	alice.mustSalvor(t, "-n", "team-a", "restore", "create", "from-platform-config", "--from-backup", "platform-two", "--include-resources", "configmaps", "--wait")
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "settings"}, cm); err != nil || cm.Data["team"] != "team-a" {
		t.Errorf("alice's config map restored from platform-two: %v %v", cm.Data, err)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "crown-jewels"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("alice's restore from platform-two made the platform namespace's config map in team-a: %v", err)
	}
	c.mustSalvor(t, "backup-location", "set", "default", "--share-backups=false")
	eventually(t, "team-a no longer sees platform-two", time.Minute, func() (bool, string) {
		ok, out := seen(alice, "team-a", "platform-two")
		return !ok, out
	})
	if ok, out := seen(alice, "team-a", "platform-one"); !ok {
		t.Errorf("team-a lost platform-one, which its annotation shares:\n%s", out)
	}

	// Quotas. Each namespace runs one job at a time (the default): alice's
	// three backups asked for at once run one after another, the later
	// ones saying they wait, while bob's, asked for after them, goes
	// ahead of her last.
	// (Made through the API, not the CLI, to be asked for within
	// milliseconds of each other.)
	for _, req := range []struct {
		who      *cluster
		ns, name string
	}{{alice, "team-a", "q1"}, {alice, "team-a", "q2"}, {alice, "team-a", "q3"}, {bob, "team-b", "q1"}} {
		if err := req.who.client.Create(ctx, &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: req.ns, Name: req.name}}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "alice's last backup waiting for its turn", time.Minute, func() (bool, string) {
		q3 := &salvorv1.Backup{}
		if err := alice.client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "q3"}, q3); err != nil {
			return false, err.Error()
		}
		if q3.Status.Phase != "" && q3.Status.Phase != salvorv1.BackupPhaseNew {
			t.Fatalf("alice's q3 started (%s) without being seen waiting: annotations %v", q3.Status.Phase, q3.Annotations)
		}
		return strings.Contains(q3.Annotations["salvor.dev/waiting"], `waiting for its turn: namespace "team-a"`), fmt.Sprint(q3.Annotations)
	})
	runs := map[string]*salvorv1.Backup{}
	for _, name := range []string{"team-a.q1", "team-a.q2", "team-a.q3", "team-b.q1"} {
		eventually(t, name+" Completed", 2*time.Minute, func() (bool, string) {
			b := &salvorv1.Backup{}
			if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: name}, b); err != nil {
				return false, err.Error()
			}
			runs[name] = b
			return b.Status.Phase == salvorv1.BackupPhaseCompleted, string(b.Status.Phase)
		})
	}
	for _, pair := range [][2]string{{"team-a.q1", "team-a.q2"}, {"team-a.q2", "team-a.q3"}} {
		if a, b := runs[pair[0]], runs[pair[1]]; b.Status.StartTimestamp.Before(a.Status.CompletionTimestamp) {
			t.Errorf("%s started at %s, before %s ended at %s: alice's jobs ran at once", pair[1], b.Status.StartTimestamp, pair[0], a.Status.CompletionTimestamp)
		}
	}
	if a3, b1 := runs["team-a.q3"], runs["team-b.q1"]; a3.Status.StartTimestamp.Before(b1.Status.StartTimestamp) {
		t.Errorf("bob's backup started at %s, after alice's last at %s: bob waited behind alice", b1.Status.StartTimestamp, a3.Status.StartTimestamp)
	}
	if q3 := (&salvorv1.Backup{}); alice.client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "q3"}, q3) != nil || q3.Annotations["salvor.dev/waiting"] != "" {
		t.Errorf("alice's q3 still says it waits: %v", q3.Annotations)
	}
	// As many backups as the location's quota lets a namespace keep: the
	// next is refused, saying so.
	kept := &salvorv1.BackupList{}
	if err := c.client.List(ctx, kept, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.TenantNamespaceLabel: "team-a"}); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "backup-location", "set", "default", "--tenant-max-backups", fmt.Sprint(len(kept.Items)))
	eventually(t, "alice's backup beyond her quota refused", time.Minute, func() (bool, string) {
		name := fmt.Sprintf("over-%d", time.Now().UnixNano())
		out, _ := alice.salvor(t, "-n", "team-a", "backup", "create", name, "--wait")
		describe, _ := alice.salvor(t, "-n", "team-a", "backup", "describe", name)
		return strings.Contains(out, "FailedValidation") && strings.Contains(describe, `backups in location "default", as many as its quota allows`), describe
	})
	c.mustSalvor(t, "backup-location", "set", "default", "--tenant-max-backups", "0")
	// As much as a namespace's backups may hold: what alice's hold (their
	// files, as their manifests record them) is more than 1Ki.
	c.mustSalvor(t, "backup-location", "set", "default", "--tenant-max-bytes", "1Ki")
	eventually(t, "alice's backup beyond her quota of bytes refused", time.Minute, func() (bool, string) {
		name := fmt.Sprintf("heavy-%d", time.Now().UnixNano())
		out, _ := alice.salvor(t, "-n", "team-a", "backup", "create", name, "--wait")
		describe, _ := alice.salvor(t, "-n", "team-a", "backup", "describe", name)
		return strings.Contains(out, "FailedValidation") && strings.Contains(describe, `backups hold`) && strings.Contains(describe, "spec.tenants.quota.maxBytes 1Ki"), describe
	})
	if out := c.mustSalvor(t, "backup-location", "get", "-o", "wide"); !strings.Contains(out, "1Ki") {
		t.Errorf("the location's quota in get -o wide:\n%s", out)
	}
	c.mustSalvor(t, "backup-location", "set", "default", "--tenant-max-bytes", "0")

	// The platform team sees both teams' runs.
	if out := c.mustSalvor(t, "backup", "get"); !strings.Contains(out, "team-a.nightly") || !strings.Contains(out, "team-b.nightly") {
		t.Errorf("the platform team's backups:\n%s", out)
	}
}

// waitRequesterPolicy waits until the API server runs the requester
// policy on what who makes in namespace ns: for a moment after Salvor's
// CRDs are made it may not, and a request it has not marked is refused.
func waitRequesterPolicy(t testing.TB, who *cluster, ns string) {
	t.Helper()
	eventually(t, "the requester policy in force", time.Minute, func() (bool, string) {
		probe := &salvorv1.DownloadRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-"},
			Spec: salvorv1.DownloadRequestSpec{Target: salvorv1.DownloadTarget{Kind: salvorv1.DownloadTargetBackupLog, Name: "none"}}}
		if err := who.client.Create(context.Background(), probe); err != nil {
			return false, err.Error()
		}
		return probe.Annotations[salvorv1.RequestedByAnnotation] != "", fmt.Sprint(probe.Annotations)
	})
}

// TestTenantRestoresItsPodVolumes: a team that may manage pods and their
// claims in its namespace, and has salvor-tenant there, backs up a pod whose volume the node
// agent copies file by file into the location, loses the pod, and
// restores it from its own backup: the pod comes back in its namespace
// with its files, written by the node agent from the backup's own data.
func TestTenantRestoresItsPodVolumes(t *testing.T) {
	t.Parallel()
	c, _, _, node := fsBackupCluster(t, "--tenants")
	ctx := context.Background()
	c.mustSalvor(t, "backup-location", "set", "primary", "--tenant-selector", "salvor.dev/tenant")
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-v", Labels: map[string]string{"salvor.dev/tenant": "yes"}}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: "team-v"}})
	// Kubernetes' admin role is aggregated by the controller manager,
	// which this test does not run: the team's own rights, spelled out.
	c.create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "app-admin", Namespace: "team-v"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "persistentvolumeclaims", "configmaps", "serviceaccounts", "secrets", "services"},
			Verbs: []string{"get", "list", "watch", "create", "patch", "update", "delete"}}}})
	for _, ref := range []rbacv1.RoleRef{{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "salvor-tenant"}, {APIGroup: rbacv1.GroupName, Kind: "Role", Name: "app-admin"}} {
		c.create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dev-" + ref.Name, Namespace: "team-v"}, RoleRef: ref,
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "dev", Namespace: "team-v"}}})
	}
	script := "echo kept > /cache/file && head -c 200000 /dev/urandom > /cache/random"
	c.create(t, appPod("team-v", "web", map[string]string{podvolume.IncludeAnnotation: "cache"}, script,
		corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}))
	want := treeSums(t, c.appPodReady(t, node, "team-v", "web", 2*time.Minute))
	dev := c.asServiceAccount(t, "team-v", "dev")
	waitRequesterPolicy(t, dev, "team-v")

	dev.mustSalvor(t, "-n", "team-v", "backup", "create", "files", "--wait")
	pvbs := &salvorv1.PodVolumeBackupList{}
	if err := c.client.List(ctx, pvbs, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.BackupNameLabel: "team-v.files"}); err != nil {
		t.Fatal(err)
	}
	if len(pvbs.Items) != 1 || pvbs.Items[0].Status.Phase != salvorv1.DataMoverPhaseCompleted || pvbs.Items[0].Spec.Pod.Namespace != "team-v" {
		t.Fatalf("the team's backup's PodVolumeBackups: %+v", pvbs.Items)
	}

	if err := c.client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-v", Name: "web"}}, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the team's pod gone", 2*time.Minute, func() (bool, string) {
		err := c.client.Get(ctx, client.ObjectKey{Namespace: "team-v", Name: "web"}, &corev1.Pod{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	dev.mustSalvor(t, "-n", "team-v", "restore", "create", "back", "--from-backup", "files", "--wait")
	r := &salvorv1.Restore{}
	if err := dev.client.Get(ctx, client.ObjectKey{Namespace: "team-v", Name: "back"}, r); err != nil || r.Status.Phase != salvorv1.RestorePhaseCompleted {
		t.Fatalf("the team's restore: %s %v", r.Status.Phase, err)
	}
	pvrs := &salvorv1.PodVolumeRestoreList{}
	if err := c.client.List(ctx, pvrs, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.RestoreUIDLabel: string(mirrorOf(t, c, "team-v.back").UID)}); err != nil {
		t.Fatal(err)
	}
	if len(pvrs.Items) != 1 || pvrs.Items[0].Status.Phase != salvorv1.DataMoverPhaseCompleted || pvrs.Items[0].Spec.Pod.Namespace != "team-v" {
		t.Fatalf("the team's restore's PodVolumeRestores: %+v", pvrs.Items)
	}
	c.waitPodRunning(t, "team-v", "web")
	if got := treeSums(t, c.podVolumeDir(t, node, "team-v", "web", "cache")); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the restored pod's files:\n got %v\nwant %v", got, want)
	}
}

// mirrorOf is the server's copy of a team's restore.
func mirrorOf(t testing.TB, c *cluster, name string) *salvorv1.Restore {
	t.Helper()
	r := &salvorv1.Restore{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: name}, r); err != nil {
		t.Fatal(err)
	}
	return r
}
