package buildinfo

import (
	"runtime"
	"testing"
)

func TestGetPrefersWhatTheBuildSet(t *testing.T) {
	version, commit, date = "v1.2.3", "abc123", "2026-11-23T10:00:00Z"
	defer func() { version, commit, date = "", "", "" }()
	i := Get()
	if i.Version != "v1.2.3" || i.Commit != "abc123" || i.BuildDate != "2026-11-23T10:00:00Z" || i.GoVersion != runtime.Version() {
		t.Errorf("%+v", i)
	}
}

func TestGetNeverLeavesAFieldEmpty(t *testing.T) {
	i := Get()
	for name, v := range map[string]string{"version": i.Version, "commit": i.Commit, "date": i.BuildDate, "platform": i.Platform} {
		if v == "" {
			t.Errorf("%s is empty: %+v", name, i)
		}
	}
}
