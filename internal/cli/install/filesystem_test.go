package install

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestFilesystemLocationDir: --filesystem-location-dir mounts one host
// directory at its own path into the server's pod and the node agent's,
// so a filesystem location's root names the same directory for both;
// without it neither gets a host directory beyond the agent's pods
// directory, and a path that is not a clean absolute one is refused.
func TestFilesystemLocationDir(t *testing.T) {
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}
	base := Options{Namespace: "salvor", ServiceAccount: "salvor", Replicas: 1, ServerRules: rules, Image: "example.io/salvor:v1", UseNodeAgent: true}
	pods := func(o Options) map[string]corev1.PodSpec {
		specs := map[string]corev1.PodSpec{}
		for _, kind := range []string{"Deployment", "DaemonSet"} {
			var spec corev1.PodSpec
			obj := object(mustManifests(t, o), kind)
			raw, _, _ := unstructured.NestedMap(obj.Object, "spec", "template", "spec")
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
				t.Fatal(err)
			}
			specs[kind] = spec
		}
		return specs
	}

	with := base
	with.FilesystemLocationDir = "/srv/backups"
	for kind, spec := range pods(with) {
		var mounted, volume bool
		for _, m := range spec.Containers[0].VolumeMounts {
			if m.Name == "filesystem-locations" {
				mounted = m.MountPath == "/srv/backups" && !m.ReadOnly
			}
		}
		for _, v := range spec.Volumes {
			if v.Name == "filesystem-locations" {
				volume = v.HostPath != nil && v.HostPath.Path == "/srv/backups" && v.HostPath.Type != nil && *v.HostPath.Type == corev1.HostPathDirectory
			}
		}
		if !mounted || !volume {
			t.Errorf("%s: /srv/backups mounted %v, its hostPath volume %v: %+v", kind, mounted, volume, spec)
		}
	}
	// The server keeps filesystem locations to what it has mounted: the
	// directory, or nothing when none is.
	if args := pods(with)["Deployment"].Containers[0].Args; !slices.Contains(args, "--confine-filesystem-locations") ||
		!strings.Contains(strings.Join(args, " "), "--filesystem-location-dir /srv/backups") {
		t.Errorf("server args %q: want --confine-filesystem-locations and --filesystem-location-dir /srv/backups", args)
	}
	if args := pods(base)["Deployment"].Containers[0].Args; !slices.Contains(args, "--confine-filesystem-locations") ||
		slices.Contains(args, "--filesystem-location-dir") {
		t.Errorf("server args %q without --filesystem-location-dir: want --confine-filesystem-locations and no directory", args)
	}
	for kind, spec := range pods(base) {
		for _, v := range spec.Volumes {
			if v.HostPath != nil && !(kind == "DaemonSet" && v.Name == "host-pods") {
				t.Errorf("%s without --filesystem-location-dir has hostPath volume %s (%s)", kind, v.Name, v.HostPath.Path)
			}
		}
	}

	for _, dir := range []string{"srv/backups", "/srv/backups/", "/srv/../etc", "/"} {
		bad := base
		bad.FilesystemLocationDir = dir
		if _, err := Manifests(bad); err == nil || !strings.Contains(err.Error(), "--filesystem-location-dir "+`"`+dir+`": want a clean absolute path`) {
			t.Errorf("%q: %v", dir, err)
		}
	}
}
