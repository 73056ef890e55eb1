package testbed

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/salvor-dev/salvor/internal/testbin"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Dir returns bin/testbed, where `make testbed` puts the binaries.
func Dir() (string, error) {
	root, err := testbin.ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "testbed"), nil
}

// Binary returns the path of a testbed binary, failing the test if it has
// not been built.
func Binary(t TB, name string) string {
	t.Helper()
	p, err := binaryPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// binaryPath is Binary's answer as an error, for what starts a server
// outside a test (a control plane the tests of a package share).
func binaryPath(name string) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("testbed binary %s is missing: run `make testbed` first (%v)", p, err)
	}
	return p, nil
}

// FreePort returns a TCP port on loopback that was free a moment ago.
func FreePort(t TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// MinIO is a running MinIO server.
type MinIO struct {
	Endpoint  string // http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	DataDir   string

	port, console int
	cmd           *exec.Cmd
	exited        chan struct{} // closed once cmd has been waited for
	logs          *os.File
}

// StartMinIO starts MinIO on a loopback port with a fresh data directory
// holding the given buckets, and stops it when the test ends.
func StartMinIO(t TB, buckets ...string) *MinIO {
	t.Helper()
	m := &MinIO{AccessKey: "salvor-test", SecretKey: "salvor-test-secret", DataDir: t.TempDir()}
	for _, b := range buckets {
		if err := os.MkdirAll(filepath.Join(m.DataDir, b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(m.Stop)
	// A port free a moment ago may be taken before MinIO binds it (the
	// tests beside this one start API servers, etcd and MinIOs the same
	// way): then MinIO gets new ones.
	for attempt := 1; ; attempt++ {
		m.port, m.console = minioPort(t), minioPort(t)
		m.Endpoint = fmt.Sprintf("http://127.0.0.1:%d", m.port)
		err := m.start(t)
		if err == nil {
			return m
		}
		if !errors.Is(err, errPortTaken) || attempt == 5 {
			t.Fatal(err)
		}
		t.Logf("minio: %v; trying other ports", err)
	}
}

// MinIOKMSKey is the ID of the KMS key MinIO is started with.
const MinIOKMSKey = "salvor-test-key"

var errPortTaken = errors.New("its port was taken")

// minioPort picks MinIO's ports; a test takes one first to see MinIO move.
var minioPort = FreePort

// Start starts (again) the MinIO that StartMinIO set up, on the same port
// and data, and waits until it is ready: a fault test stops it with Stop and
// brings it back.
func (m *MinIO) Start(t TB) {
	t.Helper()
	if err := m.start(t); err != nil {
		t.Fatal(err)
	}
}

func (m *MinIO) start(t TB) error {
	m.cmd = exec.Command(Binary(t, "minio"), "server", m.DataDir,
		"--address", fmt.Sprintf("127.0.0.1:%d", m.port), "--console-address", fmt.Sprintf("127.0.0.1:%d", m.console), "--quiet")
	m.cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+m.AccessKey, "MINIO_ROOT_PASSWORD="+m.SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off",
		// A built-in KMS key, so server-side encryption (SSE-S3, SSE-KMS
		// with key ID MinIOKMSKey) works as on AWS.
		"MINIO_KMS_SECRET_KEY="+MinIOKMSKey+":"+base64.StdEncoding.EncodeToString([]byte("salvor-testbed-kms-key-32-bytes!")))
	logs, err := os.Create(filepath.Join(t.TempDir(), "minio.log"))
	if err != nil {
		return err
	}
	m.logs = logs
	m.cmd.Stdout, m.cmd.Stderr = logs, logs
	if err := m.cmd.Start(); err != nil {
		return fmt.Errorf("starting minio: %w", err)
	}
	exited := make(chan struct{})
	m.exited = exited
	cmd := m.cmd
	go func() { _ = cmd.Wait(); close(exited) }()
	// Each probe is bounded: whatever holds a taken port may never answer.
	probe := &http.Client{Timeout: 2 * time.Second}
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		resp, err := probe.Get(m.Endpoint + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
		}
		// Ready only while this MinIO runs: another server may hold
		// the port it could not bind, and answer.
		select {
		case <-exited:
			return false, errors.New("minio exited")
		default:
		}
		return err == nil && resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		m.Stop()
		b, _ := os.ReadFile(logs.Name())
		if strings.Contains(string(b), "port is already in use") {
			return fmt.Errorf("minio on 127.0.0.1:%d or :%d: %w", m.port, m.console, errPortTaken)
		}
		return fmt.Errorf("minio did not become ready: %v\n%s", err, b)
	}
	return nil
}

// Stop kills MinIO at once, as a crash or a network partition would end it.
func (m *MinIO) Stop() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	<-m.exited
	m.logs.Close()
	m.cmd = nil
}

// CredentialsFile writes an AWS shared-credentials file for the server.
func (m *MinIO) CredentialsFile(t TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "credentials")
	body := fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", m.AccessKey, m.SecretKey)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TB is what the testbed's starters need of their caller: a test's
// *testing.T, or a program's own runner (make demo-csi) that stops what
// was started when it ends and turns a Fatal into an error.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Failed() bool
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	TempDir() string
}
