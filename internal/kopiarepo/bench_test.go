package kopiarepo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/salvor-dev/salvor/internal/testbed"
	"github.com/salvor-dev/salvor/internal/testbin"
)

// The data mover's path (this package: what `salvor data-mover backup`
// and `restore` run in a mover pod) beside kopia's own CLI at the version
// Salvor links, on the same data into the same MinIO in the same run, and
// beside `cat` of the same files as the floor. Each side runs as a process
// of its own, so its wall time includes starting and connecting, and its
// peak RSS is its own. `make bench` runs it; SALVOR_BENCH_MOVER_MIB (1024)
// and SALVOR_BENCH_SMALL_FILES (100000) size the data.

// benchChildEnv, when set, makes the test binary one side's process: a
// benchJob as JSON, its result as JSON on stdout.
const benchChildEnv = "SALVOR_KOPIA_BENCH_CHILD"

func TestMain(m *testing.M) {
	if job := os.Getenv(benchChildEnv); job != "" {
		os.Exit(benchChild(job))
	}
	os.Exit(m.Run())
}

type benchJob struct {
	Op       string // create, backup, restore
	Loc      Location
	NS       string
	Password string
	WorkDir  string
	Dir      string
	Name     string // the source's name
	Snapshot string // restore's
}

type benchResult struct {
	SnapshotID       string
	TotalBytes       int64
	IncrementalBytes int64
}

func benchChild(raw string) int {
	var job benchJob
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	st, err := Storage(ctx, job.Loc, job.NS, job.Op == "create")
	if err == nil {
		var repo *Repository
		repo, err = Open(ctx, st, Options{Password: job.Password, WorkDir: job.WorkDir, Create: job.Op == "create"})
		if err == nil {
			var res benchResult
			switch job.Op {
			case "backup":
				var b BackupResult
				b, err = repo.Backup(ctx, job.Dir, Source{Requester: DataMover, Name: job.Name}, nil)
				res = benchResult{SnapshotID: b.SnapshotID, TotalBytes: b.TotalBytes, IncrementalBytes: b.IncrementalBytes}
			case "restore":
				res.TotalBytes, err = repo.Restore(ctx, job.Snapshot, job.Dir, nil)
			}
			if cerr := repo.Close(ctx); err == nil {
				err = cerr
			}
			if err == nil {
				err = json.NewEncoder(os.Stdout).Encode(res)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// run is one timed process: its wall time and peak RSS.
type run struct {
	seconds float64
	rssMiB  float64
	out     []byte
}

func timed(b *testing.B, cmd *exec.Cmd) run {
	b.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	r := run{seconds: time.Since(start).Seconds(), out: stdout.Bytes()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rssMiB = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	return r
}

func (s *volumeBench) salvor(b *testing.B, job benchJob) (run, benchResult) {
	b.Helper()
	job.Loc, job.NS, job.Password, job.WorkDir = s.loc, "bench", s.password, b.TempDir()
	raw, err := json.Marshal(job)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), benchChildEnv+"="+string(raw))
	r := timed(b, cmd)
	var res benchResult
	if job.Op != "create" {
		if err := json.Unmarshal(r.out, &res); err != nil {
			b.Fatalf("the %s process said %q: %v", job.Op, r.out, err)
		}
	}
	return r, res
}

// kopia runs kopia's CLI on its own repository (its own prefix in the same
// bucket), with a fresh cache each time as a mover pod has.
func (s *volumeBench) kopia(b *testing.B, args ...string) run {
	b.Helper()
	if err := os.RemoveAll(s.kopiaCache); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(s.kopiaBin, args...)
	cmd.Env = append(os.Environ(), "KOPIA_PASSWORD="+s.password, "KOPIA_CONFIG_PATH="+s.kopiaConfig,
		"KOPIA_CHECK_FOR_UPDATES=false", "KOPIA_LOG_DIR="+filepath.Join(s.kopiaCache, "..", "logs"))
	return timed(b, cmd)
}

type volumeBench struct {
	loc                               Location
	password                          string
	kopiaBin, kopiaConfig, kopiaCache string
	rows                              []string
}

func (s *volumeBench) row(data, tool, op string, r run, bytes int64, note string) {
	rate := float64(bytes) / (1 << 20) / r.seconds
	rss := "-"
	if r.rssMiB > 0 {
		rss = fmt.Sprintf("%.0f", r.rssMiB)
	}
	s.rows = append(s.rows, fmt.Sprintf("| %s | %s | %s | %.2f | %.0f | %s | %s |", data, tool, op, r.seconds, rate, rss, note))
}

// BenchmarkMoverBesideKopiaCLI: backup, incremental backup and restore of
// one large file and of many small files, by the mover's code and by
// kopia's CLI, with `cat` as the floor.
func BenchmarkMoverBesideKopiaCLI(b *testing.B) {
	mib := testbin.EnvCount(b, "SALVOR_BENCH_MOVER_MIB", 1024)
	files := testbin.EnvCount(b, "SALVOR_BENCH_SMALL_FILES", 100000)
	minio := testbed.StartMinIO(b, "bench")
	s := &volumeBench{password: "bench-password", kopiaBin: buildKopiaCLI(b)}
	s.loc = Location{Provider: "salvor.dev/s3", Config: map[string]string{"bucket": "bench", "prefix": "salvor", "region": "minio",
		"s3Url": minio.Endpoint, "credentialsFile": minio.CredentialsFile(b)}}
	work := b.TempDir()
	s.kopiaConfig, s.kopiaCache = filepath.Join(work, "kopia", "repository.config"), filepath.Join(work, "kopia", "cache")
	s.salvor(b, benchJob{Op: "create"})
	s.kopia(b, "repository", "create", "s3", "--bucket", "bench", "--prefix", "kopia-cli/", "--endpoint", strings.TrimPrefix(minio.Endpoint, "http://"),
		"--disable-tls", "--region", "minio", "--access-key", minio.AccessKey, "--secret-access-key", minio.SecretKey, "--cache-directory", s.kopiaCache)
	// The mover's policy: zstd-fastest, every snapshot kept.
	s.kopia(b, "policy", "set", "--global", "--compression", "zstd-fastest")

	large := filepath.Join(work, "large")
	small := filepath.Join(work, "small")
	writeLarge(b, large, mib)
	writeSmall(b, small, files, int64(mib)<<20/int64(files))
	b.ResetTimer()
	for _, d := range []struct{ name, dir string }{
		{fmt.Sprintf("1 file, %d MiB", mib), large},
		{fmt.Sprintf("%d files, %d MiB", files, mib), small},
	} {
		total := treeBytes(b, d.dir)
		floor := timed(b, exec.Command("sh", "-c", `find "$1" -type f -print0 | xargs -0 cat > /dev/null`, "cat", d.dir))
		floor.rssMiB = 0 // the shell's, not cat's
		s.row(d.name, "cat", "read (page cache warm)", floor, total, "")

		r, res := s.salvor(b, benchJob{Op: "backup", Dir: d.dir, Name: filepath.Base(d.dir)})
		s.row(d.name, "salvor mover", "backup", r, total, fmt.Sprintf("%d MiB written", res.IncrementalBytes>>20))
		k := s.kopia(b, "snapshot", "create", d.dir)
		s.row(d.name, "kopia CLI", "backup", k, total, fmt.Sprintf("mover/kopia time %.2f", r.seconds/k.seconds))

		out := filepath.Join(work, "restored-salvor-"+filepath.Base(d.dir))
		r, _ = s.salvor(b, benchJob{Op: "restore", Dir: out, Snapshot: res.SnapshotID})
		s.row(d.name, "salvor mover", "restore", r, total, "")
		if got := treeBytes(b, out); got != total {
			b.Fatalf("the mover restored %d bytes of %d", got, total)
		}
		id := latestKopiaSnapshot(b, s, d.dir)
		kout := filepath.Join(work, "restored-kopia-"+filepath.Base(d.dir))
		k = s.kopia(b, "snapshot", "restore", id, kout)
		s.row(d.name, "kopia CLI", "restore", k, total, fmt.Sprintf("mover/kopia time %.2f", r.seconds/k.seconds))
		if err := os.RemoveAll(out); err != nil {
			b.Fatal(err)
		}
		if err := os.RemoveAll(kout); err != nil {
			b.Fatal(err)
		}

		if d.dir == large {
			for _, scattered := range []bool{false, true} {
				op := "backup after 1% changed in one place"
				if scattered {
					op = "backup after 1% changed in 64 KiB blocks across the file"
				}
				changed := changeOnePercent(b, filepath.Join(large, "big.bin"), scattered)
				r, res = s.salvor(b, benchJob{Op: "backup", Dir: d.dir, Name: filepath.Base(d.dir)})
				s.row(d.name, "salvor mover", op, r, total,
					fmt.Sprintf("%d KiB written for %d KiB changed (%.1f%% of the volume)", res.IncrementalBytes>>10, changed>>10, 100*float64(res.IncrementalBytes)/float64(total)))
				k = s.kopia(b, "snapshot", "create", d.dir)
				s.row(d.name, "kopia CLI", op, k, total, fmt.Sprintf("mover/kopia time %.2f", r.seconds/k.seconds))
			}
		}
	}
	b.StopTimer()
	fmt.Println("| data | tool | operation | seconds | MiB/s | peak RSS (MiB) | note |")
	fmt.Println("|---|---|---|---:|---:|---:|---|")
	for _, r := range s.rows {
		fmt.Println(r)
	}
}

func buildKopiaCLI(b *testing.B) string {
	b.Helper()
	bin, err := testbin.KopiaCLI()
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

func latestKopiaSnapshot(b *testing.B, s *volumeBench, dir string) string {
	b.Helper()
	out := s.kopia(b, "snapshot", "list", dir, "--json").out
	var list []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(out, &list); err != nil || len(list) == 0 {
		b.Fatalf("kopia snapshot list: %v\n%s", err, out)
	}
	return list[len(list)-1].ID
}

func writeLarge(b *testing.B, dir string, mib int) {
	b.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "big.bin"))
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for range mib {
		rand.Read(buf)
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// writeSmall writes n files of size bytes each, 1,000 to a directory.
func writeSmall(b *testing.B, dir string, n int, size int64) {
	b.Helper()
	buf := make([]byte, size)
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", i/1000))
		if i%1000 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		rand.Read(buf)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d", i)), buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// changeOnePercent overwrites 1% of a file, in one run at a random place
// or in 64 KiB blocks at random places (scattered), returning the bytes
// changed.
func changeOnePercent(b *testing.B, path string, scattered bool) int64 {
	b.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	if !scattered {
		n := fi.Size() / 100
		at, err := rand.Int(rand.Reader, big.NewInt(fi.Size()-n))
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, n)
		rand.Read(buf)
		if _, err := f.WriteAt(buf, at.Int64()); err != nil {
			b.Fatal(err)
		}
		return n
	}
	const block = 64 << 10
	blocks := fi.Size() / 100 / block
	buf := make([]byte, block)
	for range blocks {
		at, err := rand.Int(rand.Reader, big.NewInt(fi.Size()/block))
		if err != nil {
			b.Fatal(err)
		}
		rand.Read(buf)
		if _, err := f.WriteAt(buf, at.Int64()*block); err != nil {
			b.Fatal(err)
		}
	}
	return blocks * block
}

func treeBytes(b *testing.B, dir string) int64 {
	b.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
