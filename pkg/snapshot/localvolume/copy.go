package localvolume

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"
)

const (
	// bigFile is the size from which a file is copied inside the kernel
	// (copy_file_range) while another goroutine checksums what has been
	// written; below it, one read, hash and write is cheaper.
	bigFile = 4 << 20
	// chunk is how much of a big file is copied between progress updates
	// and cancellation checks.
	chunk = 8 << 20
	// fileWorkers files are copied at once: small files cost system calls
	// more than bytes, and those overlap.
	fileWorkers = 4
	// progressEvery is how often a copy's state file is rewritten.
	progressEvery = 100 * time.Millisecond
)

var buffers = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// treeCopy copies one directory tree into another and records the checksum
// of every file as written, so the checksums describe what the copy holds
// even when the source changes under it.
type treeCopy struct {
	src, dst string
	root     *os.Root      // src, opened for the run: files are read through it
	limiter  *rate.Limiter // nil: as fast as the disk goes
	step     int           // bytes between limiter waits and progress
	done     atomic.Int64
	// algorithm checksums each file; newTreeCopy has checked it is known.
	algorithm string

	mu   sync.Mutex
	sums map[string]string
}

// node is a directory, file or symbolic link of the tree, with what is
// kept of it besides its bytes: permissions and owner.
type node struct {
	rel      string
	mode     fs.FileMode
	uid, gid int
	size     int64  // files
	link     string // symbolic links: the target
}

// treePlan is what a copy will make.
type treePlan struct {
	dirs, files, links []node
	total              int64 // bytes of the files
}

func newTreeCopy(src, dst string, bytesPerSecond int64, algorithm string) (*treeCopy, error) {
	if _, _, err := newHash(algorithm); err != nil {
		return nil, err
	}
	t := &treeCopy{src: src, dst: dst, step: chunk, algorithm: algorithm, sums: map[string]string{}}
	if bytesPerSecond > 0 {
		// Waits of about an eighth of a second keep a slowed copy smooth.
		t.step = int(min(max(bytesPerSecond/8, 64<<10), chunk))
		t.limiter = rate.NewLimiter(rate.Limit(bytesPerSecond), t.step)
	}
	return t, nil
}

// plan walks the source: the directories to make, in order, the files to
// copy and the links to make, and the files' total size. Other kinds of
// file (devices, sockets, pipes) have no place in a volume's data and are
// left out.
func (t *treeCopy) plan() (*treePlan, error) {
	p := &treePlan{}
	err := filepath.WalkDir(t.src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(t.src, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone since its directory was read: a live volume's temporary file
		}
		if err != nil {
			return err
		}
		n := node{rel: rel, mode: info.Mode(), uid: -1, gid: -1, size: info.Size()}
		n.uid, n.gid = owner(info)
		switch {
		case d.IsDir():
			p.dirs = append(p.dirs, n)
		case d.Type().IsRegular():
			p.files = append(p.files, n)
			p.total += n.size
		case d.Type()&fs.ModeSymlink != 0:
			if n.link, err = os.Readlink(path); err != nil {
				return err
			}
			p.links = append(p.links, n)
		}
		return nil
	})
	return p, err
}

// keepMeta gives a copied node its source's permissions and, where this
// process may (as root), its owner.
func keepMeta(path string, n node) error {
	// Owner first: a change of owner clears the set-user and set-group ID
	// bits.
	if n.uid >= 0 {
		if err := os.Lchown(path, n.uid, n.gid); err != nil && !errors.Is(err, fs.ErrPermission) {
			return err
		}
	}
	if n.mode&fs.ModeSymlink == 0 {
		return os.Chmod(path, n.mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
	}
	return nil
}

// run copies the files with a few workers; progress is called at least
// every progressEvery with the bytes copied so far. The first error stops
// every worker.
func (t *treeCopy) run(ctx context.Context, p *treePlan, progress func(done int64) error) error {
	if err := os.RemoveAll(t.dst); err != nil {
		return err
	}
	root, err := os.OpenRoot(t.src)
	if err != nil {
		return err
	}
	defer root.Close()
	t.root = root
	// Directories are made open to this process and given their own
	// permissions last, or a read-only one could not be filled.
	for _, d := range p.dirs {
		if err := os.MkdirAll(filepath.Join(t.dst, d.rel), 0o700); err != nil {
			return err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-gctx.Done():
				return nil
			case <-tick.C:
				if err := progress(t.done.Load()); err != nil {
					return err
				}
			}
		}
	})
	work := make(chan node)
	workers, wctx := errgroup.WithContext(gctx)
	for range fileWorkers {
		workers.Go(func() error {
			for f := range work {
				if err := t.copyFile(wctx, f); err != nil {
					return fmt.Errorf("file %s: %w", f.rel, err)
				}
			}
			return nil
		})
	}
	workers.Go(func() error {
		defer close(work)
		for _, f := range p.files {
			select {
			case work <- f:
			case <-wctx.Done():
				return nil
			}
		}
		return nil
	})
	err = workers.Wait()
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = t.finish(p)
	}
	g.Go(func() error { return errStop }) // stops the progress writer
	if perr := g.Wait(); !errors.Is(perr, errStop) && perr != nil {
		// The state file could not be written: that is why the copy stopped.
		err = perr
	}
	return err
}

var errStop = errors.New("copy finished")

// finish makes the links, whose targets are recorded with the checksums,
// and gives the directories their permissions and owners, deepest first.
func (t *treeCopy) finish(p *treePlan) error {
	for _, l := range p.links {
		path := filepath.Join(t.dst, l.rel)
		if err := os.Symlink(l.link, path); err != nil {
			return err
		}
		if err := keepMeta(path, l); err != nil {
			return err
		}
		t.sums[filepath.ToSlash(l.rel)] = "symlink " + l.link
	}
	for i := len(p.dirs) - 1; i >= 0; i-- {
		if err := keepMeta(filepath.Join(t.dst, p.dirs[i].rel), p.dirs[i]); err != nil {
			return err
		}
	}
	return nil
}

func (t *treeCopy) wait(ctx context.Context, n int) error {
	if t.limiter == nil {
		return ctx.Err()
	}
	return t.limiter.WaitN(ctx, n)
}

func (t *treeCopy) copyFile(ctx context.Context, f node) error {
	// The volume is live: between the walk and this open a pod may swap a
	// directory on the path for a symbolic link to the host. The file is
	// opened inside the volume's root, which refuses any path that would
	// leave it, and must still be a regular file.
	in, err := t.root.Open(f.rel)
	if errors.Is(err, fs.ErrNotExist) {
		// Removed from a live volume since the walk: it is not part of
		// the volume any more, so not of its snapshot either.
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening %s inside volume %s: %w", f.rel, t.src, err)
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s in volume %s is no longer a regular file (%s) since the copy began", f.rel, t.src, info.Mode().Type())
	}
	// Permissions and owner are those of what is read, not of what the
	// walk saw.
	f.mode = info.Mode()
	f.uid, f.gid = owner(info)
	dstPath := filepath.Join(t.dst, f.rel)
	out, err := os.OpenFile(dstPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	var sum string
	if f.size >= bigFile {
		sum, err = t.copyBig(ctx, in, out, dstPath)
	} else {
		sum, err = t.copySmall(ctx, in, out)
	}
	if err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := keepMeta(dstPath, f); err != nil {
		return err
	}
	t.mu.Lock()
	t.sums[filepath.ToSlash(f.rel)] = sum
	t.mu.Unlock()
	return nil
}

// copySmall reads, hashes and writes through one buffer.
func (t *treeCopy) copySmall(ctx context.Context, in io.Reader, out io.Writer) (string, error) {
	bp := buffers.Get().(*[]byte)
	defer buffers.Put(bp)
	buf := (*bp)[:min(len(*bp), t.step)]
	h, sum, _ := newHash(t.algorithm)
	for {
		if err := t.wait(ctx, len(buf)); err != nil {
			return "", err
		}
		n, rerr := io.ReadFull(in, buf)
		if n > 0 {
			h.Write(buf[:n])
			if _, err := out.Write(buf[:n]); err != nil {
				return "", err
			}
			t.done.Add(int64(n))
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			return sum(h), nil
		}
		if rerr != nil {
			return "", rerr
		}
	}
}

// copyBig copies inside the kernel a step at a time, while a second
// goroutine reads back and hashes each step once it is written (from the
// page cache), so copying and hashing use both cores.
func (t *treeCopy) copyBig(ctx context.Context, in, out *os.File, dstPath string) (string, error) {
	back, err := os.Open(dstPath)
	if err != nil {
		return "", err
	}
	defer back.Close()
	written := make(chan int64, 64)
	hashed := make(chan error, 1)
	h, sum, _ := newHash(t.algorithm)
	go func() {
		bp := buffers.Get().(*[]byte)
		defer buffers.Put(bp)
		buf := *bp
		var off int64
		var herr error
		for end := range written {
			for herr == nil && off < end {
				if herr = ctx.Err(); herr != nil {
					break
				}
				n, err := back.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
				h.Write(buf[:n])
				off += int64(n)
				if err != nil {
					herr = err
				}
			}
		}
		hashed <- herr
	}()
	var total int64
	var cerr error
	for {
		if cerr = t.wait(ctx, t.step); cerr != nil {
			break
		}
		n, err := io.CopyN(out, in, int64(t.step))
		total += n
		t.done.Add(n)
		if n > 0 {
			written <- total
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			cerr = err
			break
		}
	}
	close(written)
	if herr := <-hashed; cerr == nil {
		cerr = herr
	}
	if cerr != nil {
		return "", cerr
	}
	return sum(h), nil
}
