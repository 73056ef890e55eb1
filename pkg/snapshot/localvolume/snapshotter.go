package localvolume

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

// Name is the built-in snapshotter's plugin name.
const Name = "salvor.dev/local-volume"

// NewV1 returns a snapshotter whose copies finish before CreateSnapshot and
// CreateVolumeFromSnapshot return.
func NewV1(log *slog.Logger) (sdk.VolumeSnapshotter, error) {
	return &snapshotter{log: log, running: map[string]copying{}}, nil
}

// NewV2 returns a snapshotter whose copies run in the background, reported
// through Progress.
func NewV2(log *slog.Logger) (sdk.VolumeSnapshotterV2, error) {
	return &snapshotterV2{snapshotter{log: log, async: true, running: map[string]copying{}}}, nil
}

// Copy phases, as kept in a copy's state file.
const (
	phaseInProgress = "InProgress"
	phaseCompleted  = "Completed"
	phaseFailed     = "Failed"
	phaseCancelled  = "Cancelled"
)

// state is a copy's progress, kept on disk.
type state struct {
	Source     string    `json:"source"`
	Target     string    `json:"target"`
	Phase      string    `json:"phase"`
	TotalBytes int64     `json:"totalBytes"`
	BytesDone  int64     `json:"bytesDone"`
	Err        string    `json:"err,omitempty"`
	PID        int       `json:"pid"`
	Started    time.Time `json:"started"`
	Updated    time.Time `json:"updated"`
}

type snapshotter struct {
	log         *slog.Logger
	async       bool
	snapshotDir string
	restoreDir  string
	rate        int64

	mu      sync.Mutex
	running map[string]copying
}

// copying is a copy this process runs: how to stop it, and done, closed
// once it stopped and recorded how it ended.
type copying struct {
	cancel context.CancelFunc
	done   chan struct{}
}

type snapshotterV2 struct{ snapshotter }

func (s *snapshotterV2) Name() string { return Name }

func (s *snapshotter) Init(config map[string]string) error {
	s.snapshotDir = config["snapshotDir"]
	if s.snapshotDir == "" || !filepath.IsAbs(s.snapshotDir) {
		return fmt.Errorf("config snapshotDir=%q: want an absolute directory", s.snapshotDir)
	}
	s.restoreDir = config["restoreDir"]
	if s.restoreDir == "" {
		s.restoreDir = filepath.Join(s.snapshotDir, "restored")
	}
	if raw := config["bytesPerSecond"]; raw != "" {
		rate, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || rate <= 0 {
			return fmt.Errorf("config bytesPerSecond=%q: want a positive integer", raw)
		}
		s.rate = rate
	}
	for _, d := range []string{s.snapshotDir, s.restoreDir, s.stateDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

func (s *snapshotter) stateDir() string { return filepath.Join(s.snapshotDir, ".state") }

// statePath is where the state of the copy with operation ID id lives.
func (s *snapshotter) statePath(id string) string {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(s.stateDir(), hex.EncodeToString(sum[:12])+".json")
}

func (s *snapshotter) readState(id string) (*state, error) {
	b, err := os.ReadFile(s.statePath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no copy with ID %q is known", id)
	}
	if err != nil {
		return nil, err
	}
	st := &state{}
	return st, json.Unmarshal(b, st)
}

func (s *snapshotter) writeState(id string, st *state) error {
	st.Updated = time.Now()
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := s.statePath(id) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, s.statePath(id))
}

func newID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// start begins copying src to dst as operation id: in the background for v2,
// before returning for v1.
func (s *snapshotter) start(ctx context.Context, id, src, dst string) error {
	st := &state{Source: src, Target: dst, Phase: phaseInProgress, PID: os.Getpid(), Started: time.Now()}
	if err := s.writeState(id, st); err != nil {
		return err
	}
	if !s.async {
		return s.run(ctx, id, st)
	}
	go func() { _ = s.run(context.Background(), id, st) }()
	return nil
}

// run copies and keeps the state file current; on failure or cancellation it
// removes the partial copy.
func (s *snapshotter) run(parent context.Context, id string, st *state) error {
	ctx, cancel := context.WithCancel(parent)
	c := copying{cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	s.running[id] = c
	s.mu.Unlock()
	defer func() {
		cancel()
		s.mu.Lock()
		delete(s.running, id)
		s.mu.Unlock()
		close(c.done)
	}()

	err := s.copy(ctx, id, st)
	if err == nil {
		st.Phase = phaseCompleted
		st.BytesDone = st.TotalBytes
		return s.writeState(id, st)
	}
	_ = os.RemoveAll(st.Target)
	st.Phase, st.Err = phaseFailed, err.Error()
	if errors.Is(err, context.Canceled) {
		st.Phase, st.Err = phaseCancelled, "cancelled"
	}
	if werr := s.writeState(id, st); werr != nil {
		s.log.Error("recording a failed copy", "id", id, "error", werr)
	}
	return fmt.Errorf("copying %s to %s: %w", st.Source, st.Target, err)
}

// copy copies the source tree and checksums every file written: a
// snapshot's sums are recorded, a copy out of a snapshot is checked
// against them.
func (s *snapshotter) copy(ctx context.Context, id string, st *state) error {
	var recorded *checksums
	fromSnapshot := filepath.Dir(st.Source) == filepath.Clean(s.snapshotDir)
	algorithm := defaultAlgorithm
	if fromSnapshot {
		var err error
		if recorded, err = s.readSums(filepath.Base(st.Source)); err != nil {
			return err
		}
		algorithm = recorded.Algorithm
	}
	t, err := newTreeCopy(st.Source, st.Target, s.rate, algorithm)
	if err != nil {
		return err
	}
	plan, err := t.plan()
	if err != nil {
		return err
	}
	st.TotalBytes, st.BytesDone = plan.total, 0
	if err := s.writeState(id, st); err != nil {
		return err
	}
	err = t.run(ctx, plan, func(done int64) error {
		st.BytesDone = done
		return s.writeState(id, st)
	})
	st.BytesDone = t.done.Load()
	if err != nil {
		return err
	}
	if fromSnapshot {
		return verify(filepath.Base(st.Source), recorded.Files, t.sums)
	}
	return s.writeSums(id, &checksums{Algorithm: algorithm, Files: t.sums})
}

func (s *snapshotter) CreateSnapshot(volumeID, volumeAZ string, tags map[string]string) (string, error) {
	return s.CreateSnapshotWithContext(context.Background(), volumeID, volumeAZ, tags)
}

// CreateSnapshotWithContext stops a v1 copy when Salvor's deadline passes.
func (s *snapshotter) CreateSnapshotWithContext(ctx context.Context, volumeID, _ string, _ map[string]string) (string, error) {
	if info, err := os.Stat(volumeID); err != nil || !info.IsDir() {
		return "", fmt.Errorf("volume %q is not a directory on this machine", volumeID)
	}
	id := newID("snap-")
	return id, s.start(ctx, id, volumeID, filepath.Join(s.snapshotDir, id))
}

func (s *snapshotter) CreateVolumeFromSnapshot(snapshotID, volumeType, volumeAZ string, iops *int64) (string, error) {
	return s.CreateVolumeFromSnapshotWithContext(context.Background(), snapshotID, volumeType, volumeAZ, iops)
}

// CreateVolumeFromSnapshotWithContext copies a snapshot into a new directory,
// whose path is the new volume's ID (and, for v2, the operation ID).
func (s *snapshotter) CreateVolumeFromSnapshotWithContext(ctx context.Context, snapshotID, _, _ string, _ *int64) (string, error) {
	if err := checkSnapshotID(snapshotID); err != nil {
		return "", err
	}
	st, err := s.readState(snapshotID)
	if err != nil {
		return "", err
	}
	if st.Phase != phaseCompleted {
		return "", fmt.Errorf("snapshot %s is %s, not Completed", snapshotID, st.Phase)
	}
	volumeID := filepath.Join(s.restoreDir, newID("vol-"))
	return volumeID, s.start(ctx, volumeID, filepath.Join(s.snapshotDir, snapshotID), volumeID)
}

func (s *snapshotter) GetVolumeInfo(string, string) (string, *int64, error) {
	return "directory", nil, nil
}

func (s *snapshotter) DeleteSnapshot(snapshotID string) error {
	if err := checkSnapshotID(snapshotID); err != nil {
		return err
	}
	// A copy still running would write into the snapshot and record its
	// state after they are removed.
	if _, err := s.stop(snapshotID); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(s.snapshotDir, snapshotID)); err != nil {
		return err
	}
	if err := os.Remove(s.statePath(snapshotID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Remove(s.sumsPath(snapshotID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// volumePath is where a hostPath or local volume keeps its path.
func volumePath(pv runtime.Unstructured) []string {
	spec, _, _ := unstructured.NestedMap(pv.UnstructuredContent(), "spec")
	if _, ok := spec["local"]; ok {
		return []string{"spec", "local", "path"}
	}
	return []string{"spec", "hostPath", "path"}
}

func (s *snapshotter) GetVolumeID(pv runtime.Unstructured) (string, error) {
	id, _, err := unstructured.NestedString(pv.UnstructuredContent(), volumePath(pv)...)
	return id, err
}

func (s *snapshotter) SetVolumeID(pv runtime.Unstructured, volumeID string) (runtime.Unstructured, error) {
	if err := s.checkVolumeID(volumeID); err != nil {
		return nil, err
	}
	obj := pv.(*unstructured.Unstructured).DeepCopy()
	return obj, unstructured.SetNestedField(obj.Object, volumeID, volumePath(pv)...)
}

// stop cancels the copy id if this process runs it, and waits until it
// has removed its partial copy and recorded the cancellation. It tells
// whether there was such a copy.
func (s *snapshotter) stop(id string) (bool, error) {
	s.mu.Lock()
	c, ok := s.running[id]
	s.mu.Unlock()
	if !ok {
		return false, nil
	}
	c.cancel()
	select {
	case <-c.done:
		return true, nil
	case <-time.After(5 * time.Second):
		return true, fmt.Errorf("copy %s did not stop within 5s", id)
	}
}

func (s *snapshotterV2) Progress(id string) (sdk.OperationProgress, error) {
	if err := s.checkCopyID(id); err != nil {
		return sdk.OperationProgress{}, err
	}
	st, err := s.readState(id)
	if err != nil {
		return sdk.OperationProgress{}, err
	}
	s.mu.Lock()
	_, mine := s.running[id]
	s.mu.Unlock()
	if st.Phase == phaseInProgress && !mine && st.PID != os.Getpid() {
		// The process that ran this copy is gone: start it again here.
		s.log.Info("resuming a copy left by an earlier process", "id", id, "pid", st.PID)
		st.PID = os.Getpid()
		if err := s.writeState(id, st); err != nil {
			return sdk.OperationProgress{}, err
		}
		// The copy gets a state of its own to update: this call goes on to
		// answer from st.
		resumed := *st
		go func() { _ = s.run(context.Background(), id, &resumed) }()
	}
	p := sdk.OperationProgress{
		NCompleted:     st.BytesDone,
		NTotal:         st.TotalBytes,
		OperationUnits: "bytes",
		Description:    st.Phase,
		Started:        st.Started,
		Updated:        st.Updated,
	}
	switch st.Phase {
	case phaseCompleted:
		p.Completed = true
	case phaseFailed, phaseCancelled:
		p.Completed, p.Err = true, st.Err
	}
	return p, nil
}

func (s *snapshotterV2) Cancel(id string) error {
	if err := s.checkCopyID(id); err != nil {
		return err
	}
	st, err := s.readState(id)
	if err != nil {
		return err
	}
	if st.Phase != phaseInProgress {
		return nil
	}
	if stopped, err := s.stop(id); stopped {
		return err
	}
	// No copier runs here (the process that ran it is gone): clean up.
	_ = os.RemoveAll(st.Target)
	st.Phase, st.Err = phaseCancelled, "cancelled"
	return s.writeState(id, st)
}
