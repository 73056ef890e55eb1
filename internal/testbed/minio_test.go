package testbed

import (
	"net"
	"net/http"
	"testing"
)

// TestMinIOMovesOffATakenPort: when the port picked for MinIO is taken
// before MinIO binds it, MinIO starts on other ports rather than failing
// the test.
func TestMinIOMovesOffATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	picks := 0
	minioPort = func(t TB) int {
		picks++
		if picks == 1 {
			return port
		}
		return FreePort(t)
	}
	t.Cleanup(func() { minioPort = FreePort })
	m := StartMinIO(t, "b")
	if m.port == port {
		t.Fatalf("minio on the taken port %d", port)
	}
	resp, err := http.Get(m.Endpoint + "/minio/health/ready")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || picks != 4 {
		t.Errorf("minio at %s: %s after %d picks, want 200 OK after 4", m.Endpoint, resp.Status, picks)
	}
}
