package localvolume

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/salvor-dev/salvor/internal/testbin"
)

// benchBytes is the volume size: SALVOR_BENCH_VOLUME_MIB, default 256.
func benchBytes(b *testing.B) int64 {
	return int64(testbin.EnvCount(b, "SALVOR_BENCH_VOLUME_MIB", 256)) << 20
}

func fill(b *testing.B, dir string, total int64, fileSize int64) {
	buf := make([]byte, min(fileSize, 4<<20))
	for i := range buf {
		buf[i] = byte(i * 31)
	}
	for i := int64(0); i*fileSize < total; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%16), fmt.Sprintf("f%06d", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		for w := int64(0); w < fileSize; w += int64(len(buf)) {
			if _, err := f.Write(buf[:min(int64(len(buf)), fileSize-w)]); err != nil {
				b.Fatal(err)
			}
		}
		f.Close()
	}
}

// BenchmarkLocalVolume snapshots and restores a volume of many small files
// and one of a single large file with the local-volume snapshotter, and
// times `cp -r` of the same trees on the same disk — the volume, as a
// snapshot copies it, and the snapshot, as a restore copies it; it reports
// MiB/s of each and the ratio to cp. Each of four rounds runs the four
// copies, each after a sync, removing each copy once timed and swapping the
// order within each pair every other round; the medians are reported.
func BenchmarkLocalVolume(b *testing.B) {
	total := benchBytes(b)
	for _, shape := range []struct {
		name string
		file int64
	}{{"small-files-64KiB", 64 << 10}, {"one-large-file", total}} {
		b.Run(shape.name, func(b *testing.B) {
			base := b.TempDir()
			vol := filepath.Join(base, "vol")
			fill(b, vol, total, shape.file)
			vs, _ := NewV1(slog.New(slog.DiscardHandler))
			if err := vs.Init(map[string]string{"snapshotDir": filepath.Join(base, "snaps")}); err != nil {
				b.Fatal(err)
			}
			timed := func(f func() error) time.Duration {
				// No step pays for the writeback of the one before.
				syscall.Sync()
				start := time.Now()
				if err := f(); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			cp := func(from, to string) func() error {
				return func() error {
					if out, err := exec.Command("cp", "-r", from, to).CombinedOutput(); err != nil {
						return fmt.Errorf("cp -r: %v %s", err, out)
					}
					return nil
				}
			}
			removed := func(dir string) {
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
			}
			var cpVols, cpSnaps, snaps, restores []time.Duration
			for round := range 4 {
				// Each copy is removed once timed, and each pair runs in
				// the other order every other round: a copy made while
				// earlier gigabytes are still being written back runs
				// slower, whichever tool makes it.
				var id string
				snapshot := func() {
					snaps = append(snaps, timed(func() (err error) {
						id, err = vs.CreateSnapshot(vol, "", nil)
						return err
					}))
				}
				cpVolume := func() {
					cpVols = append(cpVols, timed(cp(vol, filepath.Join(base, "cp-vol"))))
					removed(filepath.Join(base, "cp-vol"))
				}
				restore := func() {
					var restored string
					restores = append(restores, timed(func() (err error) {
						restored, err = vs.CreateVolumeFromSnapshot(id, "", "", nil)
						return err
					}))
					removed(restored)
				}
				cpSnapshot := func() {
					cpSnaps = append(cpSnaps, timed(cp(filepath.Join(base, "snaps", id), filepath.Join(base, "cp-snap"))))
					removed(filepath.Join(base, "cp-snap"))
				}
				if round%2 == 0 {
					cpVolume()
					snapshot()
					cpSnapshot()
					restore()
				} else {
					snapshot()
					cpVolume()
					restore()
					cpSnapshot()
				}
				if err := vs.DeleteSnapshot(id); err != nil {
					b.Fatal(err)
				}
			}
			mibs := func(d time.Duration) float64 { return float64(total) / (1 << 20) / d.Seconds() }
			cpVol, cpSnap, snap, restore := median(cpVols), median(cpSnaps), median(snaps), median(restores)
			b.ReportMetric(mibs(cpVol), "cp-volume-MiB/s")
			b.ReportMetric(mibs(snap), "snapshot-MiB/s")
			b.ReportMetric(mibs(cpSnap), "cp-snapshot-MiB/s")
			b.ReportMetric(mibs(restore), "restore-MiB/s")
			b.ReportMetric(snap.Seconds()/cpVol.Seconds(), "snapshot-x-cp")
			b.ReportMetric(restore.Seconds()/cpSnap.Seconds(), "restore-x-cp")
		})
	}
}

// median of an even count is the mean of the middle two.
func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	if len(d)%2 == 0 {
		return (d[len(d)/2-1] + d[len(d)/2]) / 2
	}
	return d[len(d)/2]
}
