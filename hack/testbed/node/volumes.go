package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// volume is one of a pod's volumes where the node made it on the host:
// under <kubelet dir>/pods/<uid>/volumes/<plugin>/<name>, as a kubelet
// keeps them, or a hostPath under the node's root.
type volume struct {
	dir      string
	readOnly bool // configMap, secret, projected and downwardAPI volumes are
	teardown func() error
}

// tokenVolume is the service account token volume the node adds to a pod
// that mounts its token (the API server's ServiceAccount admission, which
// would add it, is off on the testbed).
const tokenVolume = "kube-api-access-testbed"

const tokenPath = "/var/run/secrets/kubernetes.io/serviceaccount"

func (r *podRun) setupVolumes() error {
	ctx := r.p.stop
	for _, v := range r.pod.Spec.Volumes {
		if _, ok := r.volumes[v.Name]; ok {
			continue
		}
		vol, err := r.setupVolume(ctx, v)
		if err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
		r.volumes[v.Name] = vol
	}
	if _, ok := r.volumes[tokenVolume]; ok {
		return nil
	}
	automount, err := r.automountToken(ctx)
	if err != nil || !automount {
		return err
	}
	vol, err := r.setupVolume(ctx, corev1.Volume{Name: tokenVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(24 * 3600))}}},
	}}})
	if err != nil {
		return fmt.Errorf("the service account token: %w", err)
	}
	ns := r.pod.Namespace
	if err := write(vol.dir, "ca.crt", r.p.cfg.caData, 0o644); err != nil {
		return err
	}
	if err := write(vol.dir, "namespace", []byte(ns), 0o644); err != nil {
		return err
	}
	r.volumes[tokenVolume] = vol
	return nil
}

func (r *podRun) serviceAccount() string {
	if sa := r.pod.Spec.ServiceAccountName; sa != "" {
		return sa
	}
	return "default"
}

func (r *podRun) automountToken(ctx context.Context) (bool, error) {
	if a := r.pod.Spec.AutomountServiceAccountToken; a != nil {
		return *a, nil
	}
	sa, err := r.p.client.CoreV1().ServiceAccounts(r.pod.Namespace).Get(ctx, r.serviceAccount(), metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("service account %s: %w", r.serviceAccount(), err)
	}
	return sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken, nil
}

func (r *podRun) pluginDir(plugin, name string) (string, error) {
	d := filepath.Join(r.dir, "volumes", plugin, name)
	return d, os.MkdirAll(d, 0o755)
}

func (r *podRun) setupVolume(ctx context.Context, v corev1.Volume) (volume, error) {
	switch {
	case v.EmptyDir != nil:
		d, err := r.pluginDir("kubernetes.io~empty-dir", v.Name)
		if err == nil {
			err = os.Chmod(d, 0o777)
		}
		return volume{dir: d}, err
	case v.HostPath != nil:
		return r.hostPath(v.HostPath)
	case v.ConfigMap != nil:
		d, err := r.pluginDir("kubernetes.io~configmap", v.Name)
		if err != nil {
			return volume{}, err
		}
		return volume{dir: d, readOnly: true}, r.configMap(ctx, d, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, v.ConfigMap.DefaultMode)
	case v.Secret != nil:
		d, err := r.pluginDir("kubernetes.io~secret", v.Name)
		if err != nil {
			return volume{}, err
		}
		return volume{dir: d, readOnly: true}, r.secret(ctx, d, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, v.Secret.DefaultMode)
	case v.DownwardAPI != nil:
		d, err := r.pluginDir("kubernetes.io~downward-api", v.Name)
		if err != nil {
			return volume{}, err
		}
		return volume{dir: d, readOnly: true}, r.downwardAPI(d, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode)
	case v.Projected != nil:
		d, err := r.pluginDir("kubernetes.io~projected", v.Name)
		if err != nil {
			return volume{}, err
		}
		for _, s := range v.Projected.Sources {
			switch {
			case s.ServiceAccountToken != nil:
				err = r.token(ctx, d, s.ServiceAccountToken)
			case s.ConfigMap != nil:
				err = r.configMap(ctx, d, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, v.Projected.DefaultMode)
			case s.Secret != nil:
				err = r.secret(ctx, d, s.Secret.Name, s.Secret.Items, s.Secret.Optional, v.Projected.DefaultMode)
			case s.DownwardAPI != nil:
				err = r.downwardAPI(d, s.DownwardAPI.Items, v.Projected.DefaultMode)
			default:
				err = errors.New("the testbed node projects service account tokens, configMaps, secrets and the downward API only")
			}
			if err != nil {
				return volume{}, err
			}
		}
		return volume{dir: d, readOnly: true}, nil
	case v.PersistentVolumeClaim != nil:
		return r.claim(ctx, v.PersistentVolumeClaim)
	case v.CSI != nil:
		return volume{}, errors.New("inline CSI volumes are not supported by the testbed node; use a persistentVolumeClaim")
	}
	return volume{}, errors.New("the testbed node supports emptyDir, hostPath, configMap, secret, downwardAPI, projected and persistentVolumeClaim volumes")
}

// hostPath is under the node's root, so a test's node never hands out the
// machine's own directories, but those given with --host-dir.
func (r *podRun) hostPath(h *corev1.HostPathVolumeSource) (volume, error) {
	p := r.p.cfg.hostPathDir(h.Path)
	t := corev1.HostPathUnset
	if h.Type != nil {
		t = *h.Type
	}
	fi, err := os.Stat(p)
	switch t {
	case corev1.HostPathDirectoryOrCreate:
		if errors.Is(err, os.ErrNotExist) {
			return volume{dir: p}, os.MkdirAll(p, 0o755)
		}
	case corev1.HostPathFileOrCreate:
		if errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return volume{}, err
			}
			return volume{dir: p}, os.WriteFile(p, nil, 0o644)
		}
	case corev1.HostPathDirectory:
		if err == nil && !fi.IsDir() {
			return volume{}, fmt.Errorf("hostPath %s is not a directory", h.Path)
		}
	case corev1.HostPathFile:
		if err == nil && fi.IsDir() {
			return volume{}, fmt.Errorf("hostPath %s is a directory", h.Path)
		}
	case corev1.HostPathUnset:
		if errors.Is(err, os.ErrNotExist) {
			return volume{dir: p}, os.MkdirAll(p, 0o755) // as a kubelet's runtime does for an unset type
		}
	default:
		if err == nil {
			return volume{dir: p}, nil
		}
	}
	if err != nil {
		return volume{}, fmt.Errorf("hostPath %s: %w", h.Path, err)
	}
	return volume{dir: p}, nil
}

func mode(m *int32, def os.FileMode) os.FileMode {
	if m != nil {
		return os.FileMode(*m)
	}
	return def
}

func write(dir, rel string, data []byte, m os.FileMode) error {
	p := filepath.Join(dir, filepath.Clean("/"+rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p+".tmp", data, m); err != nil {
		return err
	}
	if err := os.Chmod(p+".tmp", m); err != nil {
		return err
	}
	return os.Rename(p+".tmp", p)
}

func project(dir string, data map[string][]byte, items []corev1.KeyToPath, what string, def *int32) error {
	if len(items) == 0 {
		for k, v := range data {
			if err := write(dir, k, v, mode(def, 0o644)); err != nil {
				return err
			}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("%s has no key %s", what, it.Key)
		}
		m := mode(def, 0o644)
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		if err := write(dir, it.Path, v, m); err != nil {
			return err
		}
	}
	return nil
}

func (r *podRun) configMap(ctx context.Context, dir, name string, items []corev1.KeyToPath, optional *bool, def *int32) error {
	cm, err := r.p.client.CoreV1().ConfigMaps(r.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil
	}
	if err != nil {
		return fmt.Errorf("configMap %s: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return project(dir, data, items, "configMap "+name, def)
}

func (r *podRun) secret(ctx context.Context, dir, name string, items []corev1.KeyToPath, optional *bool, def *int32) error {
	s, err := r.p.client.CoreV1().Secrets(r.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil
	}
	if err != nil {
		return fmt.Errorf("secret %s: %w", name, err)
	}
	return project(dir, s.Data, items, "secret "+name, def)
}

func (r *podRun) downwardAPI(dir string, items []corev1.DownwardAPIVolumeFile, def *int32) error {
	for _, it := range items {
		if it.FieldRef == nil {
			return fmt.Errorf("downwardAPI %s: the testbed node projects fieldRef items only", it.Path)
		}
		var v string
		switch it.FieldRef.FieldPath {
		case "metadata.name":
			v = r.pod.Name
		case "metadata.namespace":
			v = r.pod.Namespace
		case "metadata.uid":
			v = string(r.pod.UID)
		case "metadata.labels":
			v = keyValues(r.pod.Labels)
		case "metadata.annotations":
			v = keyValues(r.pod.Annotations)
		default:
			return fmt.Errorf("downwardAPI %s: field %s is not projected by the testbed node", it.Path, it.FieldRef.FieldPath)
		}
		if err := write(dir, it.Path, []byte(v), mode(it.Mode, mode(def, 0o644))); err != nil {
			return err
		}
	}
	return nil
}

func keyValues(m map[string]string) string {
	var b strings.Builder
	for k, v := range m {
		fmt.Fprintf(&b, "%s=%q\n", k, v)
	}
	return b.String()
}

// token asks the API server for a token bound to the pod (the TokenRequest
// API, as a kubelet does) and writes it.
func (r *podRun) token(ctx context.Context, dir string, t *corev1.ServiceAccountTokenProjection) error {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: t.ExpirationSeconds}}
	// The API server binds a token to a pod only when the pod names the
	// account; without the ServiceAccount admission plugin (off on envtest)
	// nothing fills in "default", and the token is the account's alone.
	if r.pod.Spec.ServiceAccountName != "" {
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: r.pod.Name, UID: r.pod.UID}
	}
	if t.Audience != "" {
		req.Spec.Audiences = []string{t.Audience}
	}
	tok, err := r.p.client.CoreV1().ServiceAccounts(r.pod.Namespace).CreateToken(ctx, r.serviceAccount(), req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("a token for service account %s: %w", r.serviceAccount(), err)
	}
	return write(dir, t.Path, []byte(tok.Status.Token), 0o644)
}

// claim mounts a bound claim's volume: a CSI volume through its driver's
// node service, a hostPath or local volume as its directory under the
// node's root.
func (r *podRun) claim(ctx context.Context, c *corev1.PersistentVolumeClaimVolumeSource) (volume, error) {
	pvc, err := r.p.client.CoreV1().PersistentVolumeClaims(r.pod.Namespace).Get(ctx, c.ClaimName, metav1.GetOptions{})
	if err != nil {
		return volume{}, fmt.Errorf("claim %s: %w", c.ClaimName, err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return volume{}, fmt.Errorf("claim %s is not bound yet", c.ClaimName)
	}
	pv, err := r.p.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return volume{}, fmt.Errorf("volume %s of claim %s: %w", pvc.Spec.VolumeName, c.ClaimName, err)
	}
	switch {
	case pv.Spec.CSI != nil:
		return r.p.csi.publish(ctx, r, pv, c.ReadOnly)
	case pv.Spec.HostPath != nil:
		v, err := r.hostPath(pv.Spec.HostPath)
		v.readOnly = c.ReadOnly
		return v, err
	case pv.Spec.Local != nil:
		p := r.p.cfg.hostPathDir(pv.Spec.Local.Path)
		if _, err := os.Stat(p); err != nil {
			return volume{}, fmt.Errorf("local volume %s: %w", pv.Name, err)
		}
		return volume{dir: p, readOnly: c.ReadOnly}, nil
	}
	return volume{}, fmt.Errorf("volume %s of claim %s is neither CSI, hostPath nor local, which is all the testbed node mounts", pv.Name, c.ClaimName)
}

// mounts are a container's volume mounts as the container spec lists
// them, plus the service account token where the pod gets one.
func (r *podRun) mounts(c corev1.Container) ([]mount, error) {
	var out []mount
	hasToken := false
	for _, m := range c.VolumeMounts {
		v, ok := r.volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("volume mount %s names no volume of the pod", m.Name)
		}
		src := v.dir
		if m.SubPath != "" {
			src = filepath.Join(v.dir, filepath.Clean("/"+m.SubPath))
			if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(src, 0o755); err != nil {
					return nil, err
				}
			}
		}
		slave := m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone
		out = append(out, mount{Source: src, Target: m.MountPath, ReadOnly: m.ReadOnly || v.readOnly, Slave: slave})
		hasToken = hasToken || filepath.Clean(m.MountPath) == tokenPath
	}
	if v, ok := r.volumes[tokenVolume]; ok && !hasToken {
		out = append(out, mount{Source: v.dir, Target: tokenPath, ReadOnly: true})
	}
	return out, nil
}

// teardown unmounts the pod's volumes once its containers have ended.
func (r *podRun) teardown() {
	for name, v := range r.volumes {
		if v.teardown == nil {
			continue
		}
		if err := v.teardown(); err != nil {
			r.p.log.Error("tearing down a volume", "pod", key(r.pod.Namespace, r.pod.Name), "volume", name, "err", err)
			continue
		}
		delete(r.volumes, name)
	}
}
