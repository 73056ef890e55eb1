package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// provider runs the pods bound to the node as local processes
// (virtual-kubelet's PodLifecycleHandler and the kubelet API's logs and
// exec).
type provider struct {
	cfg    *config
	client kubernetes.Interface
	res    nodeutil.ProviderConfig
	csi    *csiDrivers
	log    *slog.Logger

	mu     sync.Mutex
	pods   map[string]*podRun // namespace/name
	notify func(*corev1.Pod)
	stop   context.Context // ends when the node shuts down
}

// podRun is one pod on the node: its spec, the status the node keeps for
// it, its volumes and its running processes.
type podRun struct {
	p   *provider
	dir string // <root>/var/lib/kubelet/pods/<uid>

	mu        sync.Mutex
	pod       *corev1.Pod
	procs     map[string]*os.Process // container name -> its running process
	deleted   chan struct{}          // closed when the pod is deleted
	grace     time.Duration
	finished  chan struct{} // closed when every container has ended and the volumes are torn down
	volumes   map[string]volume
	closeOnce sync.Once
	execs     int
}

func key(namespace, name string) string { return namespace + "/" + name }

func (p *provider) NotifyPods(_ context.Context, f func(*corev1.Pod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = f
}

func (p *provider) CreatePod(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := key(pod.Namespace, pod.Name)
	if old, ok := p.pods[k]; ok && old.pod.UID == pod.UID {
		return nil
	}
	now := metav1.Now()
	pod = pod.DeepCopy()
	// The API server sets the QoS class from the pod's resources when it
	// creates it and refuses a status that changes it.
	qos := pod.Status.QOSClass
	if qos == "" {
		qos = corev1.PodQOSBestEffort
	}
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodPending, HostIP: p.cfg.address, PodIP: p.cfg.address, StartTime: &now,
		HostIPs: []corev1.HostIP{{IP: p.cfg.address}}, PodIPs: []corev1.PodIP{{IP: p.cfg.address}},
		QOSClass: qos,
	}
	for _, c := range pod.Spec.InitContainers {
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, waiting(c, "PodInitializing", ""))
	}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, waiting(c, "ContainerCreating", ""))
	}
	r := &podRun{
		p: p, pod: pod, procs: map[string]*os.Process{}, deleted: make(chan struct{}), finished: make(chan struct{}),
		dir: filepath.Join(p.cfg.kubeletDir(), "pods", string(pod.UID)), volumes: map[string]volume{},
	}
	r.deriveStatus()
	p.pods[k] = r
	go r.run()
	return nil
}

func waiting(c corev1.Container, reason, msg string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
}

// UpdatePod takes nothing from an update: a running pod's spec changes
// only in what a kubelet also ignores (image updates would restart
// containers there; the testbed's images are local binaries).
func (p *provider) UpdatePod(context.Context, *corev1.Pod) error { return nil }

func (p *provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	r, ok := p.pods[key(pod.Namespace, pod.Name)]
	p.mu.Unlock()
	if !ok || r.pod.UID != pod.UID {
		return errdefs.NotFoundf("pod %s/%s is not on this node", pod.Namespace, pod.Name)
	}
	grace := 30 * time.Second
	if pod.DeletionGracePeriodSeconds != nil {
		grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	} else if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	r.mu.Lock()
	r.grace = grace
	r.mu.Unlock()
	r.closeOnce.Do(func() { close(r.deleted) })
	go func() {
		<-r.finished
		p.mu.Lock()
		if p.pods[key(pod.Namespace, pod.Name)] == r {
			delete(p.pods, key(pod.Namespace, pod.Name))
		}
		p.mu.Unlock()
		r.mu.Lock()
		now := metav1.Now()
		r.pod.DeletionTimestamp = &now
		r.mu.Unlock()
		r.publish()
	}()
	return nil
}

func (p *provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	p.mu.Lock()
	r, ok := p.pods[key(namespace, name)]
	p.mu.Unlock()
	if !ok {
		return nil, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pod.DeepCopy(), nil
}

func (p *provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

func (p *provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*corev1.Pod
	for _, r := range p.pods {
		r.mu.Lock()
		out = append(out, r.pod.DeepCopy())
		r.mu.Unlock()
	}
	return out, nil
}

// publish hands the pod's status to virtual-kubelet, which writes it.
func (r *podRun) publish() {
	r.p.mu.Lock()
	notify := r.p.notify
	r.p.mu.Unlock()
	r.mu.Lock()
	pod := r.pod.DeepCopy()
	r.mu.Unlock()
	if notify != nil {
		notify(pod)
	}
}

// update changes the pod's status under its lock and publishes it.
func (r *podRun) update(f func(s *corev1.PodStatus)) {
	r.mu.Lock()
	f(&r.pod.Status)
	r.deriveStatus()
	r.mu.Unlock()
	r.publish()
}

// deriveStatus derives what a kubelet derives from the containers'
// states: the pod's conditions, and its turning Running with its first
// container, in that container's status update. (Published as an update
// of its own before any container started, Running gave controllers one
// event more than a cluster does: Velero 1.18's node agent, reading its
// DataUpload stale on the second, set it back from InProgress to
// Prepared and its data mover waited forever, 2026-12-07.)
func (r *podRun) deriveStatus() {
	s := &r.pod.Status
	if s.Phase == corev1.PodPending && slices.ContainsFunc(s.ContainerStatuses, func(c corev1.ContainerStatus) bool { return c.State.Running != nil }) {
		s.Phase = corev1.PodRunning
	}
	cond := func(t corev1.PodConditionType, ok bool) corev1.PodCondition {
		st := corev1.ConditionFalse
		if ok {
			st = corev1.ConditionTrue
		}
		for _, c := range s.Conditions {
			if c.Type == t && c.Status == st {
				return c
			}
		}
		return corev1.PodCondition{Type: t, Status: st, LastTransitionTime: metav1.Now()}
	}
	initialized := true
	for _, c := range s.InitContainerStatuses {
		if c.State.Terminated == nil || c.State.Terminated.ExitCode != 0 {
			initialized = false
		}
	}
	ready := len(s.ContainerStatuses) > 0 && s.Phase == corev1.PodRunning
	for _, c := range s.ContainerStatuses {
		ready = ready && c.Ready
	}
	s.Conditions = []corev1.PodCondition{
		cond(corev1.PodScheduled, true), cond(corev1.PodInitialized, initialized),
		cond(corev1.ContainersReady, ready), cond(corev1.PodReady, ready),
	}
}

func (r *podRun) isDeleted() bool {
	select {
	case <-r.deleted:
		return true
	default:
		return false
	}
}

// run is the pod's life on the node: volumes, init containers in order,
// then the containers with their restart policy, then the volumes torn
// down.
func (r *podRun) run() {
	defer close(r.finished)
	defer r.teardown()
	log := r.p.log.With("pod", key(r.pod.Namespace, r.pod.Name))
	for backoff := time.Second; ; backoff = min(2*backoff, 20*time.Second) {
		err := r.setupVolumes()
		if err == nil {
			break
		}
		log.Info("volumes not ready", "err", err)
		r.update(func(s *corev1.PodStatus) {
			s.Reason, s.Message = "", fmt.Sprintf("volumes: %v", err)
		})
		select {
		case <-r.deleted:
			r.update(func(s *corev1.PodStatus) { s.Phase = corev1.PodFailed })
			return
		case <-r.p.stop.Done():
			return
		case <-time.After(backoff):
		}
	}
	r.update(func(s *corev1.PodStatus) { s.Message = "" })
	policy := r.pod.Spec.RestartPolicy
	for i, c := range r.pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			r.update(func(s *corev1.PodStatus) {
				s.Phase, s.Reason, s.Message = corev1.PodFailed, "Unsupported", fmt.Sprintf("init container %s is a sidecar (restartPolicy: Always), which the testbed node does not run", c.Name)
			})
			return
		}
		for {
			code := r.runContainer(c, true, i)
			if code == 0 {
				break
			}
			if policy == corev1.RestartPolicyNever || r.isDeleted() || r.p.stop.Err() != nil {
				r.update(func(s *corev1.PodStatus) {
					s.Phase = corev1.PodFailed
					for j := range s.ContainerStatuses {
						s.ContainerStatuses[j].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
					}
				})
				return
			}
			if !r.backoff(&r.pod.Status.InitContainerStatuses[i]) {
				return
			}
		}
	}
	var wg sync.WaitGroup
	codes := make([]int, len(r.pod.Spec.Containers))
	for i, c := range r.pod.Spec.Containers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				codes[i] = r.runContainer(c, false, i)
				again := policy == corev1.RestartPolicyAlways || policy == "" || (policy == corev1.RestartPolicyOnFailure && codes[i] != 0)
				if !again || r.isDeleted() || r.p.stop.Err() != nil {
					return
				}
				if !r.backoff(&r.pod.Status.ContainerStatuses[i]) {
					return
				}
			}
		}()
	}
	wg.Wait()
	phase := corev1.PodSucceeded
	for _, c := range codes {
		if c != 0 {
			phase = corev1.PodFailed
		}
	}
	r.update(func(s *corev1.PodStatus) { s.Phase = phase })
}

// backoff waits before a container restarts (as a kubelet's CrashLoopBackOff,
// from 1 s up to 20 s); false when the pod was deleted meanwhile.
func (r *podRun) backoff(st *corev1.ContainerStatus) bool {
	r.mu.Lock()
	n := st.RestartCount
	r.mu.Unlock()
	d := min(time.Duration(1<<min(n, 5))*time.Second, 20*time.Second)
	select {
	case <-r.deleted:
		return false
	case <-r.p.stop.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// runContainer runs one container to its end and returns its exit code.
func (r *podRun) runContainer(c corev1.Container, init bool, i int) int {
	status := func(f func(st *corev1.ContainerStatus)) {
		r.update(func(s *corev1.PodStatus) {
			if init {
				f(&s.InitContainerStatuses[i])
			} else {
				f(&s.ContainerStatuses[i])
			}
		})
	}
	if r.isDeleted() {
		return 137
	}
	cmd, err := r.command(c)
	if err != nil {
		status(func(st *corev1.ContainerStatus) {
			st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerError", Message: err.Error()}}
		})
		r.p.log.Info("container not created", "pod", key(r.pod.Namespace, r.pod.Name), "container", c.Name, "err", err)
		return setupFailed
	}
	started := make(chan error, 1)
	exited := make(chan int, 1)
	// The container dies with the node: a parent-death signal is tied to
	// the thread that started the process, so that thread waits for it.
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err != nil {
			return
		}
		_ = cmd.Wait()
		exited <- exitCode(cmd.ProcessState)
	}()
	if err := <-started; err != nil {
		status(func(st *corev1.ContainerStatus) {
			st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "StartError", Message: err.Error()}}
		})
		return setupFailed
	}
	closeLog(cmd)
	startedAt := metav1.Now()
	r.mu.Lock()
	r.procs[c.Name] = cmd.Process
	r.mu.Unlock()
	status(func(st *corev1.ContainerStatus) {
		if st.State.Terminated != nil { // a restart: the run before is the last state
			st.LastTerminationState, st.RestartCount = st.State, st.RestartCount+1
		}
		st.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt}}
		st.Ready, st.Started = !init, ptr(true)
		st.ContainerID = fmt.Sprintf("testbed://%s-%d", c.Name, cmd.Process.Pid)
		st.ImageID = st.Image
	})
	var code int
	select {
	case code = <-exited:
	case <-r.deleted:
		code = r.stopProcess(cmd.Process, exited)
	case <-r.p.stop.Done():
		code = r.stopProcess(cmd.Process, exited)
	}
	r.mu.Lock()
	delete(r.procs, c.Name)
	r.mu.Unlock()
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	msg := ""
	if code == setupFailed {
		msg = lastLine(r.logPath(c.Name, -1))
	} else {
		msg = terminationMessage(terminationPath(filepath.Join(r.dir, "containers", c.Name)))
		if msg == "" && code != 0 && c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
			msg = lastLine(r.logPath(c.Name, -1))
		}
	}
	status(func(st *corev1.ContainerStatus) {
		st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: int32(code), Reason: reason, Message: msg, StartedAt: startedAt, FinishedAt: metav1.Now(), ContainerID: st.ContainerID,
		}}
		st.Ready, st.Started = false, ptr(false)
	})
	return code
}

// stopProcess stops a container as a kubelet does: SIGTERM to its
// process group, SIGKILL once the grace period is over.
func (r *podRun) stopProcess(p *os.Process, exited <-chan int) int {
	r.mu.Lock()
	grace := r.grace
	r.mu.Unlock()
	_ = syscall.Kill(-p.Pid, syscall.SIGTERM)
	select {
	case code := <-exited:
		return code
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	return <-exited
}

// terminationPath is where a container's termination message file is
// kept on the node.
func terminationPath(scratch string) string { return filepath.Join(scratch, "termination-log") }

// terminationMessage reads a container's termination message: at most
// 4096 bytes, as a kubelet reads it.
func terminationMessage(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, _ := io.ReadFull(f, b)
	return string(b[:n])
}

func exitCode(s *os.ProcessState) int {
	if ws, ok := s.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return s.ExitCode()
}

func ptr[T any](v T) *T { return &v }

// command is the process that sets up a container's filesystem in a new
// mount namespace and execs its program there.
func (r *podRun) command(c corev1.Container) (*exec.Cmd, error) {
	scratch := filepath.Join(r.dir, "containers", c.Name)
	rootfs := filepath.Join(scratch, "rootfs")
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return nil, err
	}
	spec := containerSpec{Rootfs: rootfs, Scratch: scratch, Dir: c.WorkingDir, Env: r.env(c),
		ReadOnlyRoot: c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem}
	bin, imageOK := r.p.cfg.binary(c.Image)
	spec.Image = imageOK
	if imageOK {
		spec.ImageName, spec.ImagePath = filepath.Base(bin), bin
	}
	switch {
	case len(c.Command) > 0:
		spec.Command = true
		spec.Argv = append(append([]string{}, c.Command...), c.Args...)
	case imageOK:
		spec.Argv = append([]string{filepath.Base(bin)}, c.Args...)
	default:
		return nil, fmt.Errorf("image %q maps to no binary on node %s (start it with --image NAME=BINARY)", c.Image, r.p.cfg.nodeName)
	}
	sc := r.pod.Spec.SecurityContext
	if sc != nil {
		spec.UID, spec.GID = sc.RunAsUser, sc.RunAsGroup
	}
	if c.SecurityContext != nil {
		if c.SecurityContext.RunAsUser != nil {
			spec.UID = c.SecurityContext.RunAsUser
		}
		if c.SecurityContext.RunAsGroup != nil {
			spec.GID = c.SecurityContext.RunAsGroup
		}
	}
	mounts, err := r.mounts(c)
	if err != nil {
		return nil, err
	}
	// A volume mounted over an image file's directory hides the file, as
	// it hides an image's files on a real node.
	for _, f := range r.p.cfg.files(c.Image) {
		if !inVolume(mounts, f.Target) {
			spec.Mounts = append(spec.Mounts, f)
		}
	}
	spec.Mounts = append(spec.Mounts, mounts...)
	// The termination message file, as a kubelet gives it: empty at each
	// start, read when the container ends (terminationMessage).
	term := terminationPath(scratch)
	if err := os.WriteFile(term, nil, 0o666); err != nil {
		return nil, err
	}
	if err := os.Chmod(term, 0o666); err != nil {
		return nil, err
	}
	target := c.TerminationMessagePath
	if target == "" {
		target = corev1.TerminationMessagePathDefault
	}
	spec.Mounts = append(spec.Mounts, mount{Source: term, Target: target})
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	specPath := filepath.Join(scratch, "spec.json")
	if err := os.WriteFile(specPath, b, 0o600); err != nil {
		return nil, err
	}
	log, err := r.newLog(c.Name)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(r.p.cfg.self, "run-container", specPath)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if imageOK {
		f, err := os.Open(bin)
		if err != nil {
			log.Close()
			return nil, fmt.Errorf("image %q's binary: %w", c.Image, err)
		}
		cmd.ExtraFiles = []*os.File{f}
	}
	return cmd, nil
}

// closeLog closes the node's copies of the files a started container
// holds.
func closeLog(cmd *exec.Cmd) {
	if f, ok := cmd.Stdout.(*os.File); ok {
		f.Close()
	}
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
}

// env is the container's environment: what the pod spec says
// (virtual-kubelet resolved valueFrom and envFrom into values), the API
// server as an in-cluster client finds it, and the pod's host name.
func (r *podRun) env(c corev1.Container) []string {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=" + r.pod.Name}
	api := map[string]string{
		"KUBERNETES_SERVICE_HOST": r.p.cfg.apiHost, "KUBERNETES_SERVICE_PORT": r.p.cfg.apiPort,
		"KUBERNETES_SERVICE_PORT_HTTPS": r.p.cfg.apiPort, "KUBERNETES_PORT": "tcp://" + r.p.cfg.apiHost + ":" + r.p.cfg.apiPort,
	}
	for _, e := range c.Env {
		if _, ok := api[e.Name]; ok || strings.HasPrefix(e.Name, "KUBERNETES_PORT_") {
			continue // the service's cluster IP routes nowhere on the testbed
		}
		env = append(env, e.Name+"="+e.Value)
	}
	for k, v := range api {
		env = append(env, k+"="+v)
	}
	return env
}

// Logs: every run of a container writes its own file; the last two are
// kept (the current and the previous one).

func (r *podRun) logPath(container string, run int) string {
	dir := filepath.Join(r.dir, "logs", container)
	if run < 0 {
		entries, _ := os.ReadDir(dir)
		run = len(entries) + run
	}
	return filepath.Join(dir, fmt.Sprintf("%d.log", run))
}

func (r *podRun) newLog(container string) (*os.File, error) {
	dir := filepath.Join(r.dir, "logs", container)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	entries, _ := os.ReadDir(dir)
	return os.OpenFile(filepath.Join(dir, fmt.Sprintf("%d.log", len(entries))), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

func lastLine(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

func (p *provider) run(namespace, name string) (*podRun, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.pods[key(namespace, name)]
	if !ok {
		return nil, errdefs.NotFoundf("pod %s/%s is not on node %s", namespace, name, p.cfg.nodeName)
	}
	return r, nil
}

func (r *podRun) hasContainer(name string) (corev1.Container, bool) {
	for _, c := range append(append([]corev1.Container{}, r.pod.Spec.InitContainers...), r.pod.Spec.Containers...) {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.Container{}, false
}

// GetContainerLogs serves pods/log: the current or previous run's output,
// its last lines or bytes, and followed while the container runs.
func (p *provider) GetContainerLogs(ctx context.Context, namespace, name, container string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	r, err := p.run(namespace, name)
	if err != nil {
		return nil, err
	}
	if _, ok := r.hasContainer(container); !ok {
		return nil, errdefs.NotFoundf("pod %s/%s has no container %s", namespace, name, container)
	}
	run := -1
	if opts.Previous {
		run = -2
	}
	path := r.logPath(container, run)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if opts.Previous {
			return nil, errdefs.NotFoundf("container %s of pod %s/%s has no previous run", container, namespace, name)
		}
		return nil, errdefs.InvalidInputf("container %s of pod %s/%s has not started", container, namespace, name)
	}
	if err != nil {
		return nil, err
	}
	if opts.Tail > 0 {
		lines := strings.SplitAfter(string(b), "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		if len(lines) > opts.Tail {
			lines = lines[len(lines)-opts.Tail:]
		}
		b = []byte(strings.Join(lines, ""))
	}
	if opts.LimitBytes > 0 && len(b) > opts.LimitBytes {
		b = b[:opts.LimitBytes]
	}
	if !opts.Follow || opts.Previous {
		return io.NopCloser(strings.NewReader(string(b))), nil
	}
	pr, pw := io.Pipe()
	go func() {
		f, err := os.Open(path)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		defer f.Close()
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			pw.CloseWithError(err)
			return
		}
		if _, err := pw.Write(b); err != nil {
			return
		}
		for {
			n, err := io.Copy(pw, f)
			if err != nil {
				return
			}
			r.mu.Lock()
			_, running := r.procs[container]
			r.mu.Unlock()
			if n == 0 && !running {
				pw.Close()
				return
			}
			select {
			case <-ctx.Done():
				pw.Close()
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return pr, nil
}

// RunInContainer serves pods/exec: the command runs in a mount namespace
// of its own built as the container's is, with the container's
// environment.
func (p *provider) RunInContainer(ctx context.Context, namespace, name, container string, cmd []string, attach api.AttachIO) error {
	r, err := p.run(namespace, name)
	if err != nil {
		return err
	}
	r.mu.Lock()
	_, running := r.procs[container]
	r.mu.Unlock()
	c, ok := r.hasContainer(container)
	if !ok || !running {
		return errdefs.InvalidInputf("container %s of pod %s/%s is not running", container, namespace, name)
	}
	if attach.TTY() {
		return errdefs.InvalidInput("the testbed node runs commands without a terminal")
	}
	c.Command, c.Args = cmd, nil
	r.mu.Lock()
	r.execs++
	c.Name = fmt.Sprintf("%s.exec-%d", container, r.execs)
	r.mu.Unlock()
	x, err := r.command(c)
	if err != nil {
		return err
	}
	closeLog(x)
	x.Stdout, x.Stderr = attach.Stdout(), attach.Stderr()
	if in := attach.Stdin(); in != nil {
		x.Stdin = in
	}
	x.SysProcAttr.Pdeathsig = syscall.SIGKILL
	err = x.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitError{exitErr}
	}
	return err
}

// exitError carries a command's exit code to the API server's exec stream.
type exitError struct{ *exec.ExitError }

func (e exitError) ExitStatus() int { return e.ExitCode() }
func (e exitError) Exited() bool    { return true }
func (e exitError) Code() int       { return e.ExitCode() }
func (e exitError) String() string  { return e.Error() }

// What the testbed node does not serve says so (an embedded nil Provider
// would panic instead).

func (p *provider) AttachToContainer(_ context.Context, namespace, name, container string, _ api.AttachIO) error {
	return errdefs.InvalidInputf("the testbed node does not attach to containers (%s/%s %s): use logs --follow or exec", namespace, name, container)
}

func (p *provider) PortForward(_ context.Context, namespace, name string, port int32, _ io.ReadWriteCloser) error {
	return errdefs.InvalidInputf("the testbed node does not forward ports (%s/%s:%d): its pods share the host's network, dial 127.0.0.1", namespace, name, port)
}

func (p *provider) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	return nil, errdefs.NotFound("the testbed node keeps no stats")
}

func (p *provider) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) {
	return nil, errdefs.NotFound("the testbed node keeps no metrics")
}

var _ nodeutil.Provider = (*provider)(nil)
