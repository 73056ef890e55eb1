package backup

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestVerifiable: a whole backup may be verified, and one not yet ended
// (the server verifies it once it is); one that ended without being whole
// is refused, saying why.
func TestVerifiable(t *testing.T) {
	for phase, want := range map[salvorv1.BackupPhase]string{
		salvorv1.BackupPhaseCompleted:                  "",
		salvorv1.BackupPhasePartiallyFailed:            "",
		salvorv1.BackupPhaseInProgress:                 "",
		salvorv1.BackupPhaseWaitingForPluginOperations: "",
		salvorv1.BackupPhaseFailed:                     "backup b is Failed: only a whole backup (Completed or PartiallyFailed) can be verified",
		salvorv1.BackupPhaseFailedValidation:           "backup b is FailedValidation: only a whole backup",
	} {
		err := verifiable(&salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: salvorv1.BackupStatus{Phase: phase}})
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", phase, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: error %v, want %q", phase, err, want)
		}
	}
}

// TestVerificationOutcome: the outcome is printed as asked (a table, or
// the status as JSON) and a failed verification fails the command, naming
// the backup, in either form.
func TestVerificationOutcome(t *testing.T) {
	failed := &salvorv1.BackupVerification{Phase: salvorv1.VerificationPhaseFailed, Manifest: true, Request: "r1",
		Objects: []salvorv1.VerifiedObject{{Name: "backups/b/b.tar.gz", Result: "changed", Detail: "sha256 differs"}}}
	passed := &salvorv1.BackupVerification{Phase: salvorv1.VerificationPhasePassed, Manifest: true, Request: "r2"}
	for _, tc := range []struct {
		format  string
		v       *salvorv1.BackupVerification
		wantOut string
		wantErr bool
	}{
		{"", failed, "backups/b/b.tar.gz", true},
		{"", passed, "Verification: Passed", false},
		{"json", failed, `"request": "r1"`, true},
		{"json", passed, `"request": "r2"`, false},
	} {
		var out bytes.Buffer
		o := &verifyOptions{format: output.Format(tc.format)}
		err := o.outcome(&out, "b", tc.v)
		if !strings.Contains(out.String(), tc.wantOut) {
			t.Errorf("%s %s: output lacks %q:\n%s", tc.format, tc.v.Phase, tc.wantOut, out.String())
		}
		if tc.format == "json" && !json.Valid(out.Bytes()) {
			t.Errorf("json %s: not JSON:\n%s", tc.v.Phase, out.String())
		}
		if tc.wantErr != (err != nil) || (err != nil && (!errors.Is(err, errVerifyFailed) || !strings.Contains(err.Error(), "backup b"))) {
			t.Errorf("%s %s: error %v", tc.format, tc.v.Phase, err)
		}
	}
}
