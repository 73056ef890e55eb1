package v1

import (
	"maps"
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

// TestScheduledBackupMeta: a schedule's backups carry the template's labels
// or, without them, the schedule's; always the schedule-name labels; and
// the schedule's annotations but kubectl's and Salvor's own.
func TestScheduledBackupMeta(t *testing.T) {
	s := &Schedule{}
	s.Name = "nightly"
	s.Labels = map[string]string{"team": "shop", ScheduleNameLabel: "forged"}
	s.Annotations = map[string]string{"owner": "ops", "kubectl.kubernetes.io/last-applied-configuration": "{}", SyncedAnnotation: "primary"}
	labels, annotations := ScheduledBackupMeta(s, nil)
	if want := map[string]string{"team": "shop", ScheduleNameLabel: "nightly", VeleroScheduleNameLabel: "nightly"}; !maps.Equal(labels, want) {
		t.Errorf("labels %v, want %v", labels, want)
	}
	if want := map[string]string{"owner": "ops"}; !maps.Equal(annotations, want) {
		t.Errorf("annotations %v, want %v", annotations, want)
	}
	labels, _ = ScheduledBackupMeta(s, map[string]string{"tier": "gold"})
	if want := map[string]string{"tier": "gold", ScheduleNameLabel: "nightly", VeleroScheduleNameLabel: "nightly"}; !maps.Equal(labels, want) {
		t.Errorf("with template labels: %v, want %v", labels, want)
	}
	if s.Labels[ScheduleNameLabel] != "forged" {
		t.Error("the schedule's own labels changed")
	}
}

func TestSuffixedName(t *testing.T) {
	stamp := "-20261127031500"
	for _, tc := range []struct {
		base, suffix string
		most         int
		want         string
	}{
		{"nightly", stamp, 253, "nightly" + stamp},
		{strings.Repeat("a", 238), stamp, 253, strings.Repeat("a", 238) + stamp},
		{strings.Repeat("a", 250), stamp, 253, strings.Repeat("a", 238) + stamp},
		// A cut that ends in '-' or '.' loses them: "x-.-suffix" is no name.
		{strings.Repeat("a", 236) + "-.b", stamp, 253, strings.Repeat("a", 236) + stamp},
		{strings.Repeat("nightly.", 10), "-verify-r1", 63, strings.Repeat("nightly.", 6) + "night-verify-r1"},
		{strings.Repeat("a", 52) + ".bbbb", "-verify-r1", 63, strings.Repeat("a", 52) + "-verify-r1"},
	} {
		got := SuffixedName(tc.base, tc.suffix, tc.most)
		if got != tc.want {
			t.Errorf("SuffixedName(%q, %q, %d) = %q, want %q", tc.base, tc.suffix, tc.most, got, tc.want)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("SuffixedName(%q...) = %q: not an object name: %v", tc.base[:min(10, len(tc.base))], got, errs)
		}
	}
}
