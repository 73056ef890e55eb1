package podvolume

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The cases are Velero 1.18's documented rules for file-system backup
// (opt-in, opt-out, and the volumes it never copies) and what its pod
// volume backupper skips with a warning.
func TestChoose(t *testing.T) {
	vol := func(name string, src corev1.VolumeSource) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: src}
	}
	claim := func(name, claim string) corev1.Volume {
		return vol(name, corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}})
	}
	empty := func(name string) corev1.Volume {
		return vol(name, corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})
	}
	all := []corev1.Volume{
		claim("data", "data"), empty("cache"),
		vol("host", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}),
		vol("cfg", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}),
		vol("sec", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}),
		vol("proj", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}),
		vol("down", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}),
		vol("default-token-x1", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}),
		// Velero matches the default token by its prefix alone.
		empty("default-token-like"), empty("unmounted"), claim("raw", "raw"), claim("hostpv", "hostpv"),
	}
	mounts := []corev1.VolumeMount{}
	for _, v := range all {
		if v.Name != "unmounted" {
			mounts = append(mounts, corev1.VolumeMount{Name: v.Name})
		}
	}
	claims := map[string]Claim{"raw": {Block: true}, "hostpv": {HostPath: true}}
	pod := func(phase corev1.PodPhase, ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web", Annotations: ann},
			Spec:   corev1.PodSpec{Volumes: all, Containers: []corev1.Container{{Name: "c", VolumeMounts: mounts}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		defaultFS bool
		want      string
	}{
		{"no annotation, opt-in: nothing", pod(corev1.PodRunning, nil), false, "copy [] out [] skip []"},
		{"opt-in names volumes", pod(corev1.PodRunning, map[string]string{IncludeAnnotation: "cache, data,cache"}), false,
			"copy [data cache] out [] skip []"},
		{"opt-in of what cannot be copied", pod(corev1.PodRunning, map[string]string{IncludeAnnotation: "host,raw,hostpv,unmounted,nope"}), false,
			"copy [] out [] skip [host raw hostpv unmounted nope]"},
		{"opt-in ignores the exclude annotation", pod(corev1.PodRunning, map[string]string{IncludeAnnotation: "data", ExcludeAnnotation: "data"}), false,
			"copy [data] out [] skip []"},
		{"default: every volume but the cluster's own state and hostPath", pod(corev1.PodRunning, nil), true,
			"copy [data cache] out [] skip [unmounted raw hostpv]"},
		{"default with opt-out", pod(corev1.PodRunning, map[string]string{ExcludeAnnotation: "data,cache"}), true,
			"copy [] out [data cache] skip [unmounted raw hostpv]"},
		{"default ignores the include annotation", pod(corev1.PodRunning, map[string]string{IncludeAnnotation: "cfg"}), true,
			"copy [data cache] out [] skip [unmounted raw hostpv]"},
		{"a pod not running: every wanted volume skipped", pod(corev1.PodPending, map[string]string{IncludeAnnotation: "data"}), false,
			"copy [] out [] skip [data]"},
		{"a pod not running, nothing wanted: nothing said", pod(corev1.PodSucceeded, nil), false, "copy [] out [] skip []"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Choose(tc.pod, tc.defaultFS, claims)
			var skipped []string
			for _, s := range c.Skipped {
				skipped = append(skipped, s.Volume)
				if s.Reason == "" {
					t.Errorf("volume %s skipped saying nothing", s.Volume)
				}
			}
			if got := fmt.Sprintf("copy %v out %v skip %v", orEmpty(c.Copy), orEmpty(c.OptedOut), orEmpty(skipped)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func TestSkipReasons(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web", Annotations: map[string]string{IncludeAnnotation: "data,gone"}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
	c := Choose(p, false, nil)
	want := []Skip{
		{"data", "pod app/web is not started, not Running: its volumes are mounted only while it runs"},
		{"gone", "pod app/web has no volume gone (named by backup.velero.io/backup-volumes)"},
	}
	if fmt.Sprint(c.Skipped) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", c.Skipped, want)
	}
}

func TestDir(t *testing.T) {
	csiPV := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}
	nfsPV := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-nfs"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}}}}
	claimVol := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}
	tests := []struct {
		uid  string
		v    corev1.Volume
		pv   *corev1.PersistentVolume
		want string
	}{
		{"u1", claimVol, csiPV, "u1/volumes/kubernetes.io~csi/pvc-1/mount"},
		{"u1", claimVol, nfsPV, "u1/volumes/*/pv-nfs"},
		{"u1", corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, nil, "u1/volumes/kubernetes.io~empty-dir/cache"},
		{"u1", corev1.Volume{Name: "eph", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}}, nil, "u1/volumes/kubernetes.io~csi/eph/mount"},
		{"u1", claimVol, nil, "error"},
		{"../x", claimVol, csiPV, "error"},
		{"", claimVol, csiPV, "error"},
		{"u1", claimVol, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: ".."}}, "error"},
	}
	for _, tc := range tests {
		got, err := Dir(types.UID(tc.uid), &tc.v, tc.pv)
		if err != nil {
			got = "error"
		}
		if got != tc.want {
			t.Errorf("Dir(%q, %s): %s (%v), want %s", tc.uid, tc.v.Name, got, err, tc.want)
		}
	}
}

// TestChoosePolicies: a volume policy that matches a claim's volume
// decides before the annotations, as in Velero 1.18: fs-backup copies it
// unasked, snapshot and skip keep it out even when annotated or by
// default.
func TestChoosePolicies(t *testing.T) {
	claim := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
	}
	vols := []corev1.Volume{claim("data"), claim("logs"), claim("tmp"), claim("plain")}
	var mounts []corev1.VolumeMount
	for _, v := range vols {
		mounts = append(mounts, corev1.VolumeMount{Name: v.Name})
	}
	claims := map[string]Claim{"data": {Policy: "fs-backup"}, "logs": {Policy: "snapshot"}, "tmp": {Policy: "skip"}}
	for _, tc := range []struct {
		annotation string
		defaultFS  bool
		want       string
	}{
		{"", false, "[data]"},
		{"logs,tmp,plain", false, "[data plain]"},
		{"", true, "[data plain]"},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Annotations: map[string]string{IncludeAnnotation: tc.annotation}},
			Spec: corev1.PodSpec{Volumes: vols, Containers: []corev1.Container{{Name: "c", VolumeMounts: mounts}}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if got := fmt.Sprint(Choose(pod, tc.defaultFS, claims).Copy); got != tc.want {
			t.Errorf("annotation %q, default %v: copy %s, want %s", tc.annotation, tc.defaultFS, got, tc.want)
		}
	}
}
