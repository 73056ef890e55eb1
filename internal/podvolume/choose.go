package podvolume

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const (
	// IncludeAnnotation is the comma-separated list of a pod's volumes to
	// copy file by file (Velero's opt-in).
	IncludeAnnotation = "backup.velero.io/backup-volumes"
	// ExcludeAnnotation is the comma-separated list of a pod's volumes not
	// to copy when a backup copies every volume by default (Velero's
	// opt-out).
	ExcludeAnnotation = "backup.velero.io/backup-volumes-excludes"
)

// Claim is what the choice needs to know of a claim a pod mounts.
type Claim struct {
	// HostPath: the claim's volume is a hostPath persistent volume, which
	// is not under the kubelet's pod directories.
	HostPath bool
	// Block: the claim is a raw block device (volumeMode Block).
	Block bool
	// Policy is what the backup's volume policies say of the claim's
	// volume (skip, snapshot, fs-backup), or "" when none matched: where
	// one did, it decides, whatever the pod's annotations say (Velero
	// 1.18's order).
	Policy string
}

// Choice is what a backup does with the pod's volumes.
type Choice struct {
	// Copy are the volumes copied file by file, in the pod spec's order.
	Copy []string
	// OptedOut are the volumes the exclude annotation kept out.
	OptedOut []string
	// Skipped are the volumes asked for (or taken by default) that are not
	// copied, each with why: the backup warns of each.
	Skipped []Skip
}

// Skip is a volume not copied, and why.
type Skip struct {
	Volume, Reason string
}

// Choose applies Velero's rules to pod: defaultToFS is the backup's
// defaultVolumesToFsBackup; claims has the pod's claims by name (one
// missing is taken as a plain filesystem claim).
func Choose(pod *corev1.Pod, defaultToFS bool, claims map[string]Claim) Choice {
	var c Choice
	byName := map[string]*corev1.Volume{}
	for i := range pod.Spec.Volumes {
		byName[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	var wanted []string
	decided := func(v corev1.Volume) (string, bool) {
		if v.PersistentVolumeClaim == nil {
			return "", false
		}
		p := claims[v.PersistentVolumeClaim.ClaimName].Policy
		return p, p != ""
	}
	if defaultToFS {
		excluded := Names(pod.Annotations[ExcludeAnnotation])
		for _, v := range pod.Spec.Volumes {
			switch {
			case v.HostPath != nil, v.Secret != nil, v.ConfigMap != nil, v.Projected != nil, v.DownwardAPI != nil,
				strings.HasPrefix(v.Name, "default-token"):
				// The cluster's own state, backed up as objects; or not
				// under the kubelet's pod directories (hostPath).
			case func() bool { _, ok := decided(v); return ok }():
				// The volume policy's, below.
			case slices.Contains(excluded, v.Name):
				c.OptedOut = append(c.OptedOut, v.Name)
			default:
				wanted = append(wanted, v.Name)
			}
		}
	} else {
		for _, name := range Names(pod.Annotations[IncludeAnnotation]) {
			if v := byName[name]; v != nil {
				if _, ok := decided(*v); ok {
					continue // the volume policy's, below
				}
			}
			wanted = append(wanted, name)
		}
	}
	for _, v := range pod.Spec.Volumes {
		if p, _ := decided(v); p == "fs-backup" {
			wanted = append(wanted, v.Name)
		}
	}
	if len(wanted) == 0 {
		return c
	}
	mounted := map[string]bool{}
	for _, ctr := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		for _, m := range ctr.VolumeMounts {
			mounted[m.Name] = true
		}
	}
	running := pod.Status.Phase == corev1.PodRunning
	for _, name := range wanted {
		v := byName[name]
		var why string
		switch {
		case v == nil:
			why = fmt.Sprintf("pod %s/%s has no volume %s (named by %s)", pod.Namespace, pod.Name, name, IncludeAnnotation)
		case !running:
			why = fmt.Sprintf("pod %s/%s is %s, not Running: its volumes are mounted only while it runs", pod.Namespace, pod.Name, phaseOf(pod))
		case v.HostPath != nil || (v.PersistentVolumeClaim != nil && claims[v.PersistentVolumeClaim.ClaimName].HostPath):
			why = fmt.Sprintf("volume %s of pod %s/%s is a hostPath volume, which is not under the kubelet's pod directories where the node agent reads", name, pod.Namespace, pod.Name)
		case v.PersistentVolumeClaim != nil && claims[v.PersistentVolumeClaim.ClaimName].Block:
			why = fmt.Sprintf("volume %s of pod %s/%s is a block volume: file-system backup copies files only", name, pod.Namespace, pod.Name)
		case !mounted[name]:
			why = fmt.Sprintf("volume %s of pod %s/%s is mounted by no container, so no node mounts it", name, pod.Namespace, pod.Name)
		}
		if why != "" {
			c.Skipped = append(c.Skipped, Skip{Volume: name, Reason: why})
			continue
		}
		if !slices.Contains(c.Copy, name) {
			c.Copy = append(c.Copy, name)
		}
	}
	index := map[string]int{}
	for i, v := range pod.Spec.Volumes {
		index[v.Name] = i
	}
	slices.SortStableFunc(c.Copy, func(a, b string) int { return index[a] - index[b] })
	return c
}

func phaseOf(pod *corev1.Pod) corev1.PodPhase {
	if pod.Status.Phase == "" {
		return "not started"
	}
	return pod.Status.Phase
}

// Names splits an annotation's comma-separated volume names (spaces around
// a name are not part of it).
func Names(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
