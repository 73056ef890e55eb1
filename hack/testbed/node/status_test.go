package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodTurnsRunningWithItsFirstContainer: a pod stays Pending until a
// container runs, turns Running in that container's own status update,
// and an ended pod's phase is left as its run set it.
func TestPodTurnsRunningWithItsFirstContainer(t *testing.T) {
	waiting := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, Ready: true}
	for _, tc := range []struct {
		name       string
		phase      corev1.PodPhase
		containers []corev1.ContainerStatus
		want       corev1.PodPhase
		wantReady  corev1.ConditionStatus
	}{
		{"no container started", corev1.PodPending, []corev1.ContainerStatus{waiting, waiting}, corev1.PodPending, corev1.ConditionFalse},
		{"the first started", corev1.PodPending, []corev1.ContainerStatus{running, waiting}, corev1.PodRunning, corev1.ConditionFalse},
		{"all started", corev1.PodPending, []corev1.ContainerStatus{running, running}, corev1.PodRunning, corev1.ConditionTrue},
		{"ended", corev1.PodSucceeded, []corev1.ContainerStatus{running}, corev1.PodSucceeded, corev1.ConditionFalse},
	} {
		r := &podRun{pod: &corev1.Pod{Status: corev1.PodStatus{Phase: tc.phase, ContainerStatuses: tc.containers}}}
		r.deriveStatus()
		if got := r.pod.Status.Phase; got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
		for _, c := range r.pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status != tc.wantReady {
				t.Errorf("%s: Ready %s, want %s", tc.name, c.Status, tc.wantReady)
			}
		}
	}
}
