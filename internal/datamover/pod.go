package datamover

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// PasswordSecret and PasswordKey hold the kopia repositories' password
// in the server's namespace (Velero keeps its in velero-repo-credentials,
// under the same key).
const (
	PasswordSecret = "salvor-repo-credentials"
	PasswordKey    = "repository-password"
	// PasswordEnv passes it to the mover; LocationPasswordEnv an
	// unencrypted location's own, when the Secret has one, which wins.
	PasswordEnv         = "SALVOR_REPO_PASSWORD"
	LocationPasswordEnv = "SALVOR_REPO_LOCATION_PASSWORD"
)

// Paths inside a mover pod.
const (
	VolumePath      = "/data"
	WorkPath        = "/work"
	CredentialsPath = "/credentials"
	CACertPath      = "/cacert"
)

// Pods is how mover pods are made: what the server was told
// (salvor server --data-mover-*).
type Pods struct {
	// Image is Salvor's image; its entrypoint is salvor.
	Image           string
	ImagePullPolicy corev1.PullPolicy
	// ServiceAccount may read DataUploads and DataDownloads and patch
	// their status in the server's namespace, and nothing else.
	ServiceAccount string
	NodeSelector   map[string]string
	Tolerations    []corev1.Toleration
	Resources      corev1.ResourceRequirements
	// CacheSize bounds the emptyDir of kopia's caches (zero: no bound).
	CacheSize resource.Quantity
}

// UploadPod is the pod that uploads du's claim: attempt counts the pods
// made for it (so each retry is a new name, and the old one can finish
// terminating). The location's credential Secret, when it names one, is
// mounted as a file; the repository password comes from its Secret; the
// pod gets no other Secret and no host path.
func (p Pods) UploadPod(du *salvorv1.DataUpload, bsl *salvorv1.BackupStorageLocation, attempt int) *corev1.Pod {
	args := []string{"data-mover", "backup", "--data-upload", du.Name, "--namespace", du.Namespace,
		"--source", VolumePath, "--work-dir", WorkPath}
	pod := p.pod(du.Name, attempt, labels(du), args, bsl)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: du.Name, ReadOnly: true}}})
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: VolumePath, ReadOnly: true})
	// Reading every file whatever its owner and mode: DAC_OVERRIDE, the
	// one capability the pod holds (Pod Security baseline allows it;
	// restricted allows none, and a mover without it would skip files).
	c.SecurityContext.Capabilities.Add = []corev1.Capability{"DAC_OVERRIDE"}
	return pod
}

// DownloadPod is the pod that writes dd's data into the mover's claim,
// mounted read-write. It holds the capabilities that writing every file
// back as it was takes (owners, modes, files whatever their mode), and
// no other.
func (p Pods) DownloadPod(dd *salvorv1.DataDownload, bsl *salvorv1.BackupStorageLocation, attempt int) *corev1.Pod {
	args := []string{"data-mover", "restore", "--data-download", dd.Name, "--namespace", dd.Namespace,
		"--target", VolumePath, "--work-dir", WorkPath}
	pod := p.pod(dd.Name, attempt, labels(dd), args, bsl)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: dd.Name}}})
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: VolumePath})
	c.SecurityContext.Capabilities.Add = []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER"}
	return pod
}

// passwordEnv hands a mover pod its location's repository password, as
// Passwords.Get finds it: an encrypted location's own key; for an
// unencrypted one, its own key if the Secret has it, else the shared key
// (both optional, so the pod starts either way and MoverPassword says
// what is missing).
func passwordEnv(bsl *salvorv1.BackupStorageLocation) []corev1.EnvVar {
	from := func(key string, optional bool) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: PasswordSecret}, Key: key, Optional: &optional}}
	}
	if bsl.Spec.Encryption != nil {
		return []corev1.EnvVar{{Name: PasswordEnv, ValueFrom: from(PasswordKeyOf(bsl), false)}}
	}
	return []corev1.EnvVar{{Name: PasswordEnv, ValueFrom: from(PasswordKey, true)}, {Name: LocationPasswordEnv, ValueFrom: from(LocationPasswordKey(bsl), true)}}
}

// MoverPassword is the repository password a mover pod was given
// (passwordEnv): its location's own, else the shared one.
func MoverPassword(getenv func(string) string) string {
	return cmp.Or(getenv(LocationPasswordEnv), getenv(PasswordEnv))
}

// PodName is the name of attempt n's pod.
func PodName(name string, attempt int) string {
	base := name
	if len(base) > 240 {
		base = base[:240]
	}
	return base + "-" + strconv.Itoa(attempt)
}

func (p Pods) pod(name string, attempt int, l map[string]string, args []string, bsl *salvorv1.BackupStorageLocation) *corev1.Pod {
	no, yes, root := false, true, int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: PodName(name, attempt), Namespace: bsl.Namespace, Labels: l},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			ServiceAccountName:           p.ServiceAccount,
			AutomountServiceAccountToken: &yes,
			NodeSelector:                 p.nodeSelector(),
			Tolerations:                  p.Tolerations,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser: &root, RunAsNonRoot: &no,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: p.cache()}}},
			Containers: []corev1.Container{{
				Name:            "mover",
				Image:           p.Image,
				ImagePullPolicy: p.ImagePullPolicy,
				Args:            args,
				Env:             passwordEnv(bsl),
				Resources:       p.Resources,
				VolumeMounts:    []corev1.VolumeMount{{Name: "work", MountPath: WorkPath}},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem:   &yes,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
	if ref := bsl.Spec.ObjectStorage.CACertRef; ref != nil {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "cacert", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: ref.Name, Items: []corev1.KeyToPath{{Key: ref.Key, Path: "ca.pem"}}}}})
		ct := &pod.Spec.Containers[0]
		ct.VolumeMounts = append(ct.VolumeMounts, corev1.VolumeMount{Name: "cacert", MountPath: CACertPath, ReadOnly: true})
		ct.Args = append(ct.Args, "--cacert-file", path.Join(CACertPath, "ca.pem"))
	}
	if c := bsl.Spec.Credential; c != nil {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "credentials", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: c.Name, Items: []corev1.KeyToPath{{Key: c.Key, Path: "credentials"}}}}})
		ct := &pod.Spec.Containers[0]
		ct.VolumeMounts = append(ct.VolumeMounts, corev1.VolumeMount{Name: "credentials", MountPath: CredentialsPath, ReadOnly: true})
		ct.Args = append(ct.Args, "--credentials-file", path.Join(CredentialsPath, "credentials"))
	}
	return pod
}

// nodeSelector keeps mover pods to Linux nodes (their image is built for
// Linux), unless the server's --data-mover-node-selector names the OS
// label itself.
func (p Pods) nodeSelector() map[string]string {
	s := map[string]string{corev1.LabelOSStable: "linux"}
	maps.Copy(s, p.NodeSelector)
	return s
}

func (p Pods) cache() *corev1.EmptyDirVolumeSource {
	if p.CacheSize.IsZero() {
		return &corev1.EmptyDirVolumeSource{}
	}
	limit := p.CacheSize.DeepCopy()
	return &corev1.EmptyDirVolumeSource{SizeLimit: &limit}
}

// ParseToleration reads a toleration for mover pods as the flags take it:
// KEY[=VALUE][:EFFECT] — with a value it tolerates that value (Equal),
// without one any (Exists); without an effect, every effect.
func ParseToleration(s string) (corev1.Toleration, error) {
	rest, effect, hasEffect := strings.Cut(s, ":")
	key, value, hasValue := strings.Cut(rest, "=")
	t := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists}
	if hasValue {
		t.Operator, t.Value = corev1.TolerationOpEqual, value
	}
	if hasEffect {
		switch e := corev1.TaintEffect(effect); e {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			t.Effect = e
		default:
			return t, fmt.Errorf("toleration %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", s, effect)
		}
	}
	if errs := validation.IsQualifiedName(key); key == "" || len(errs) > 0 {
		return t, fmt.Errorf("toleration %q: want KEY[=VALUE][:EFFECT] with a label key as KEY", s)
	}
	if hasValue {
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return t, fmt.Errorf("toleration %q: value %q: %s", s, value, strings.Join(errs, "; "))
		}
	}
	return t, nil
}

// ParseResources reads mover pods' requests and limits: CPU and memory
// quantities, each empty for none.
func ParseResources(cpuRequest, memoryRequest, cpuLimit, memoryLimit string) (corev1.ResourceRequirements, error) {
	var r corev1.ResourceRequirements
	for _, q := range []struct {
		flag, value string
		list        *corev1.ResourceList
		name        corev1.ResourceName
	}{
		{"--data-mover-cpu-request", cpuRequest, &r.Requests, corev1.ResourceCPU},
		{"--data-mover-memory-request", memoryRequest, &r.Requests, corev1.ResourceMemory},
		{"--data-mover-cpu-limit", cpuLimit, &r.Limits, corev1.ResourceCPU},
		{"--data-mover-memory-limit", memoryLimit, &r.Limits, corev1.ResourceMemory},
	} {
		if q.value == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.value)
		if err != nil || v.Sign() <= 0 {
			return r, fmt.Errorf("%s %q: want a positive quantity such as 500m or 256Mi", q.flag, q.value)
		}
		if *q.list == nil {
			*q.list = corev1.ResourceList{}
		}
		(*q.list)[q.name] = v
	}
	return r, nil
}
