package localvolume

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// benchBytes is the volume size: SALVOR_BENCH_VOLUME_MIB, default 256.
func benchBytes(b *testing.B) int64 {
	mib := int64(256)
	if v := os.Getenv("SALVOR_BENCH_VOLUME_MIB"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("SALVOR_BENCH_VOLUME_MIB=%q", v)
		}
		mib = n
	}
	return mib << 20
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
// times `cp -r` of the same tree on the same disk; it reports MiB/s of each
// and the ratio to cp.
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
			mibs := func(d time.Duration) float64 { return float64(total) / (1 << 20) / d.Seconds() }

			start := time.Now()
			if out, err := exec.Command("cp", "-r", vol, filepath.Join(base, "cp")).CombinedOutput(); err != nil {
				b.Fatalf("cp -r: %v %s", err, out)
			}
			cp := time.Since(start)

			vs, _ := NewV1(slog.New(slog.DiscardHandler))
			if err := vs.Init(map[string]string{"snapshotDir": filepath.Join(base, "snaps")}); err != nil {
				b.Fatal(err)
			}
			start = time.Now()
			id, err := vs.CreateSnapshot(vol, "", nil)
			if err != nil {
				b.Fatal(err)
			}
			snap := time.Since(start)
			start = time.Now()
			if _, err := vs.CreateVolumeFromSnapshot(id, "", "", nil); err != nil {
				b.Fatal(err)
			}
			restore := time.Since(start)
			b.ReportMetric(mibs(cp), "cp-MiB/s")
			b.ReportMetric(mibs(snap), "snapshot-MiB/s")
			b.ReportMetric(mibs(restore), "restore-MiB/s")
			b.ReportMetric(snap.Seconds()/cp.Seconds(), "snapshot-x-cp")
			b.ReportMetric(restore.Seconds()/cp.Seconds(), "restore-x-cp")
		})
	}
}
