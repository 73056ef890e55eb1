package kube

import (
	"strings"
	"testing"
)

// TestSecretKey: --credential takes one SECRET=KEY; not given is none.
func TestSecretKey(t *testing.T) {
	if sel, err := SecretKey(nil); sel != nil || err != nil {
		t.Errorf("not given: %v %v", sel, err)
	}
	if sel, err := SecretKey(map[string]string{"s3-creds": "cloud"}); err != nil || sel.Name != "s3-creds" || sel.Key != "cloud" {
		t.Errorf("s3-creds=cloud: %+v %v", sel, err)
	}
	for _, bad := range []map[string]string{{"a": "x", "b": "y"}} {
		if _, err := SecretKey(bad); err == nil || !strings.Contains(err.Error(), "--credential: give one SECRET=KEY") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
