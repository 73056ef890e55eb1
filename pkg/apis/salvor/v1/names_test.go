package v1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestLabelValue: a name of any length a Kubernetes object may have becomes
// a valid label value; names that fit are their own value, and two long
// names that share their first 57 characters stay apart.
func TestLabelValue(t *testing.T) {
	long := strings.Repeat("nightly-", 10) // 80 characters
	for _, tc := range []struct {
		name, want string
	}{
		{"b", "b"},
		{strings.Repeat("a", 63), strings.Repeat("a", 63)},
		// The first 57 characters and the first 6 hex digits of the SHA-256
		// of the whole name (as Velero writes its labels).
		{long + "a", "nightly-nightly-nightly-nightly-nightly-nightly-nightly-ncffae0"},
	} {
		got := LabelValue(tc.name)
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("LabelValue(%q) = %q: not a label value: %v", tc.name, got, errs)
		}
		if got != tc.want {
			t.Errorf("LabelValue(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	a, b := LabelValue(long+"a"), LabelValue(long+"b")
	if a == b || len(a) != 63 || !strings.HasPrefix(a, long[:57]) {
		t.Errorf("LabelValue of two long names: %q and %q", a, b)
	}
	if max := LabelValue(strings.Repeat("x", 253)); len(max) != 63 {
		t.Errorf("LabelValue of a 253-character name has %d characters", len(max))
	}
}
