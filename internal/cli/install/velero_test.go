package install

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/internal/cli/kube"
)

func mustManifests(t *testing.T, o Options) []*unstructured.Unstructured {
	t.Helper()
	objs, err := Manifests(o)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func object(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

// TestVeleroInstallFlags: a Velero install line's flags make what Velero's
// make — the service account's and pod's metadata, a default snapshot
// location, the location's CA — and the ones that do not go together
// are refused.
func TestVeleroInstallFlags(t *testing.T) {
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}
	pem := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(pem, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(creds, []byte("[default]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := Options{Namespace: "salvor", ServiceAccount: "salvor", Replicas: 1, ServerRules: rules, SecretFile: creds,
		Provider: "velero.io/aws", Bucket: "b", Config: map[string]string{"region": "x"}, CACertFile: pem,
		SnapshotConfig: map[string]string{"region": "y"},
		SAAnnotations:  map[string]string{"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/r"},
		PodLabels:      map[string]string{"team": "a"}, PodAnnotations: map[string]string{"x": "y"}}
	objs, err := Manifests(o)
	if err != nil {
		t.Fatal(err)
	}
	if sa := object(objs, "ServiceAccount"); sa.GetAnnotations()["eks.amazonaws.com/role-arn"] != "arn:aws:iam::1:role/r" {
		t.Errorf("service account annotations %v", sa.GetAnnotations())
	}
	dep := object(objs, "Deployment")
	labels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
	annotations, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "annotations")
	selector, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "selector", "matchLabels")
	if labels["team"] != "a" || labels["app.kubernetes.io/name"] != "salvor" || annotations["x"] != "y" || annotations["prometheus.io/scrape"] != "true" || selector["team"] != "" {
		t.Errorf("pod labels %v, annotations %v, selector %v", labels, annotations, selector)
	}
	vsl := object(objs, "VolumeSnapshotLocation")
	if vsl == nil {
		t.Fatal("no volume snapshot location")
	}
	if p, _, _ := unstructured.NestedString(vsl.Object, "spec", "provider"); p != "velero.io/aws" || vsl.GetName() != "default" {
		t.Errorf("volume snapshot location %v", vsl.Object)
	}
	if c, _, _ := unstructured.NestedStringMap(vsl.Object, "spec", "config"); c["region"] != "y" {
		t.Errorf("volume snapshot location config %v", c)
	}
	if c, _, _ := unstructured.NestedStringMap(vsl.Object, "spec", "credential"); c["name"] != CredentialsSecret || c["key"] != CredentialsKey {
		t.Errorf("volume snapshot location credential %v: not --secret-file's", c)
	}
	bsl := object(objs, "BackupStorageLocation")
	if c, _, _ := unstructured.NestedStringMap(bsl.Object, "spec", "config"); c["region"] != "x" || !strings.HasPrefix(c["caCert"], "-----BEGIN CERTIFICATE-----") {
		t.Errorf("location config %v", c)
	}
	if len(o.Config) != 1 {
		t.Errorf("--cacert changed the --config map: %v", o.Config)
	}

	// Velero's server settings reach the server's pod.
	tuned := o
	tuned.PriorityClassName, tuned.ConcurrentBackups, tuned.ScheduleSkip = "salvor-critical", 3, true
	objs, err = Manifests(tuned)
	if err != nil {
		t.Fatal(err)
	}
	dep = object(objs, "Deployment")
	if pc, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "spec", "priorityClassName"); pc != "salvor-critical" {
		t.Errorf("--server-priority-class-name: priorityClassName %q", pc)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	if got := strings.Join(args, " "); !strings.Contains(got, "--max-concurrent-backups 3") || !strings.Contains(got, "--schedule-skip-immediately") {
		t.Errorf("--concurrent-backups 3 --schedule-skip-immediately: server args %q", got)
	}
	plainArgs, _, _ := unstructured.NestedSlice(object(mustManifests(t, o), "Deployment").Object, "spec", "template", "spec", "containers")
	if got := fmt.Sprint(plainArgs[0].(map[string]any)["args"]); strings.Contains(got, "concurrent") || strings.Contains(got, "skip") {
		t.Errorf("without the flags the server's args are %s", got)
	}

	// Without a snapshot config, no snapshot location: Salvor's default.
	plain := Options{Namespace: "salvor", ServiceAccount: "salvor", Replicas: 1, ServerRules: rules, Provider: "salvor.dev/s3", Bucket: "b"}
	if objs, err := Manifests(plain); err != nil || object(objs, "VolumeSnapshotLocation") != nil {
		t.Errorf("a plain install: %v, snapshot location %v", err, object(objs, "VolumeSnapshotLocation"))
	}
	crdsOnly := plain
	crdsOnly.CRDsOnly = true
	if objs, err := Manifests(crdsOnly); err != nil || len(objs) == 0 {
		t.Errorf("--crds-only: %v", err)
	} else {
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				t.Errorf("--crds-only made a %s", o.GetKind())
			}
		}
	}

	no, yes := false, true
	for _, tc := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Provider = "" }, "--bucket needs --provider"},
		{func(o *Options) { o.Bucket = "" }, "--provider needs --bucket"},
		{func(o *Options) { o.NoDefaultLocation = true }, "--no-default-backup-location and --bucket"},
		{func(o *Options) { o.SecretFile, o.NoSecret = "creds", true }, "--no-secret and --secret-file"},
		{func(o *Options) { o.CACertFile, o.Bucket, o.NoDefaultLocation = pem, "", true }, "--cacert is the default location's"},
		{func(o *Options) { o.UseVolumeSnapshots, o.SnapshotConfig = &no, map[string]string{"region": "y"} }, "--use-volume-snapshots=false and --snapshot-location-config"},
		{func(o *Options) { o.UseVolumeSnapshots, o.Provider, o.Bucket = &yes, "", "" }, "needs --provider"},
		{func(o *Options) { o.PodLabels = map[string]string{"app.kubernetes.io/name": "x"} }, "--pod-labels app.kubernetes.io/name"},
		{func(o *Options) { o.Wait, o.DryRun = true, true }, "--wait and --dry-run: give one"},
		{func(o *Options) { o.ConcurrentBackups = -1 }, "--concurrent-backups -1: must not be negative"},
	} {
		bad := plain
		tc.change(&bad)
		if _, err := Manifests(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", bad, err, tc.want)
		}
	}
	// A snapshot location alone needs no bucket.
	vslOnly := Options{Namespace: "salvor", ServiceAccount: "salvor", Replicas: 1, ServerRules: rules, Provider: "velero.io/aws",
		SnapshotConfig: map[string]string{"region": "y"}}
	if objs, err := Manifests(vslOnly); err != nil || object(objs, "BackupStorageLocation") != nil || object(objs, "VolumeSnapshotLocation") == nil {
		t.Errorf("a snapshot location alone: %v", err)
	}
}

// TestVeleroInstallFlagsRefused: flags for Velero's node agent, file-system
// backup and feature flags stop the install before it reaches the
// cluster, saying why; two names for one setting are refused.
func TestVeleroInstallFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--use-node-agent-windows"}, "--use-node-agent-windows is Velero's: Salvor's node agent (--use-node-agent) runs as a least-privileged Linux DaemonSet"},
		{[]string{"--uploader-type", "restic", "--dry-run"}, `--uploader-type "restic": Salvor's file-system backup is kopia's`},
		{[]string{"--default-volumes-to-fs-backup", "--dry-run"}, "--default-volumes-to-fs-backup needs the node agent, which copies the files: add --use-node-agent"},
		{[]string{"--kubelet-root-dir", "/k", "--dry-run"}, "configure the node agent: add --use-node-agent"},
		{[]string{"--use-node-agent", "--kubelet-root-dir", "k", "--dry-run"}, `--kubelet-root-dir "k": must be an absolute path`},
		{[]string{"--features", "EnableCSI"}, "Salvor has no feature flags"},
		{[]string{"--restore-only"}, "ReadOnly"},
		{[]string{"--garbage-collection-frequency", "1h"}, "--garbage-collection-frequency is Velero's: Salvor deletes each expired backup when its TTL ends"},
		{[]string{"--disable-informer-cache"}, "--disable-informer-cache is Velero's"},
		{[]string{"--item-block-worker-count", "4"}, "--item-block-worker-count is Velero's"},
		{[]string{"--maintenance-job-mem-limit", "1Gi"}, "Salvor's repository maintenance Jobs run as its mover pods do"},
		{[]string{"--apply=false"}, "--apply=false is Velero's: Salvor's install always applies"},
		{[]string{"--csi-snapshot-early-frequent-polling=false"}, "--csi-snapshot-early-frequent-polling=false is Velero's"},
		{[]string{"--config", "a=b", "--backup-location-config", "c=d"}, "--config and --backup-location-config are one setting"},
		{[]string{"--velero-pod-mem-limit", "2Gi", "--server-memory-limit", "1Gi"}, "one setting"},
	} {
		cmd := NewCommand(&kube.Options{Kubeconfig: filepath.Join(t.TempDir(), "none")})
		cmd.SetArgs(tc.args)
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	// What Salvor always does is taken as it is: the install goes on (a
	// dry run, rendered without the cluster this kubeconfig does not name).
	for _, args := range [][]string{{"--apply"}, {"--csi-snapshot-early-frequent-polling"}} {
		cmd := NewCommand(&kube.Options{Kubeconfig: filepath.Join(t.TempDir(), "none")})
		cmd.SetArgs(append(args, "--dry-run"))
		out := &strings.Builder{}
		cmd.SetOut(out)
		cmd.SetErr(&strings.Builder{})
		if err := cmd.Execute(); err != nil || !strings.Contains(out.String(), "kind: Deployment") {
			t.Errorf("%v: %v, want the install to go on", args, err)
		}
	}
	// Velero's names set Salvor's settings.
	cmd := NewCommand(&kube.Options{})
	if err := cmd.ParseFlags([]string{"--velero-pod-mem-limit", "2Gi", "--backup-location-config", "region=x"}); err != nil {
		t.Fatal(err)
	}
	if v := cmd.Flags().Lookup("server-memory-limit").Value.String(); v != "2Gi" {
		t.Errorf("--velero-pod-mem-limit set --server-memory-limit to %q", v)
	}
	if v := cmd.Flags().Lookup("config").Value.String(); v != "[region=x]" {
		t.Errorf("--backup-location-config set --config to %q", v)
	}
}
