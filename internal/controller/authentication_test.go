package controller

import (
	"strings"
	"testing"

	"github.com/salvor-dev/salvor/internal/persistence"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestJudgeAuthentication: what a restore (and verify) does with what
// authenticating its backup found, and with what its status recorded.
func TestJudgeAuthentication(t *testing.T) {
	recorded := func(state string) *salvorv1.Backup {
		b := &salvorv1.Backup{}
		b.Name = "b1"
		if state != "" {
			b.Status.Authentication = &salvorv1.BackupAuthentication{State: state, Message: "signed with key k1"}
		}
		return b
	}
	for _, tc := range []struct {
		name          string
		backup        *salvorv1.Backup
		found         persistence.AuthenticationState
		authenticated bool
		warning       string
		failure       string
	}{
		{"authenticated", recorded(salvorv1.AuthenticationAuthenticated), persistence.Authenticated, true, "", ""},
		{"authenticated though the sync could not say", recorded(salvorv1.AuthenticationUnauthenticated), persistence.Authenticated, true, "", ""},
		{"forged", recorded(salvorv1.AuthenticationAuthenticated), persistence.Forged, false, "", "backup b1 failed authentication, so nothing of it is restored: why"},
		{"forged, never recorded", recorded(""), persistence.Forged, false, "", "failed authentication"},
		{"signature removed", recorded(salvorv1.AuthenticationAuthenticated), persistence.Unauthenticated, false, "", "backup b1 was authenticated (signed with key k1) but no longer is"},
		{"Velero's", recorded(""), persistence.Unauthenticated, false, "backup b1 is not authenticated (why): whoever can write to its location's bucket could have written it", ""},
		{"synced unauthenticated", recorded(salvorv1.AuthenticationUnauthenticated), persistence.Unauthenticated, false, "--trust-backup-snapshots", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, warning, failure := judgeAuthentication(tc.backup, persistence.Authentication{State: tc.found, Message: "why"})
			if ok != tc.authenticated || (tc.warning == "") != (warning == "") || !strings.Contains(warning, tc.warning) ||
				(tc.failure == "") != (failure == "") || !strings.Contains(failure, tc.failure) {
				t.Errorf("judged %v, warning %q, failure %q; want %v, %q, %q", ok, warning, failure, tc.authenticated, tc.warning, tc.failure)
			}
		})
	}
}
