package backup

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestWithStatusMessage: a refused LIST whose Status the REST client did
// not decode ("unknown") gets the API server's message and keeps its
// reason; anything else stays as it was.
func TestWithStatusMessage(t *testing.T) {
	forbidden := []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"backups.velero.io is forbidden: User \"system:serviceaccount:salvor:salvor\" cannot list resource \"backups\"","reason":"Forbidden","code":403}`)
	unknown := errors.New("unknown")
	got := withStatusMessage(unknown, forbidden)
	if !apierrors.IsForbidden(got) || !strings.Contains(got.Error(), "cannot list resource \"backups\"") {
		t.Errorf("withStatusMessage(forbidden) = %v, forbidden %v", got, apierrors.IsForbidden(got))
	}
	for _, body := range [][]byte{nil, []byte("<html>bad gateway</html>"), []byte(`{"kind":"BackupList"}`)} {
		if got := withStatusMessage(unknown, body); got != unknown {
			t.Errorf("withStatusMessage(%q) = %v, want the error as it was", body, got)
		}
	}
}
