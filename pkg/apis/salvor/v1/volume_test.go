package v1

import "testing"

// TestVolumePluginStatusAdvance: reports that cross (an older one after a
// newer) never move the bytes back, the percent follows the bytes, and
// Done is every byte.
func TestVolumePluginStatusAdvance(t *testing.T) {
	var s VolumePluginStatus
	for _, step := range []struct {
		done, total         int64
		wantDone, wantTotal int64
		wantPercent         int
	}{
		{0, 0, 0, 0, 0},
		{50, 200, 50, 200, 25},
		{150, 200, 150, 200, 75},
		{100, 200, 150, 200, 75}, // an older report
		{150, 0, 150, 200, 75},   // a report without the total
	} {
		s.Advance(step.done, step.total)
		if s.Progress.BytesDone != step.wantDone || s.Progress.TotalBytes != step.wantTotal || s.Percent != step.wantPercent {
			t.Errorf("after %d of %d: %d of %d (%d%%), want %d of %d (%d%%)", step.done, step.total,
				s.Progress.BytesDone, s.Progress.TotalBytes, s.Percent, step.wantDone, step.wantTotal, step.wantPercent)
		}
	}
	s.Done()
	if s.Progress.BytesDone != 200 || s.Percent != 100 {
		t.Errorf("done: %d of %d (%d%%)", s.Progress.BytesDone, s.Progress.TotalBytes, s.Percent)
	}
}
