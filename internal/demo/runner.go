package demo

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// runner is the testbed's TB for a program rather than a test: what the
// testbed starts is stopped, last first, when the demo ends, and a Fatal
// ends the step that called it with its error instead of a test.
type runner struct {
	dir      string
	log      io.Writer
	cleanups []func()
	failed   bool
	dirs     int
}

// fatal carries a Fatal's message out of the step that called it.
type fatal struct{ err error }

func (r *runner) Helper()                 {}
func (r *runner) Cleanup(fn func())       { r.cleanups = append(r.cleanups, fn) }
func (r *runner) Failed() bool            { return r.failed }
func (r *runner) Logf(f string, a ...any) { fmt.Fprintf(r.log, f+"\n", a...) }

func (r *runner) Errorf(f string, a ...any) {
	r.failed = true
	r.Logf(f, a...)
}

func (r *runner) Fatal(a ...any) {
	r.failed = true
	panic(fatal{errors.New(fmt.Sprint(a...))})
}

func (r *runner) Fatalf(f string, a ...any) {
	r.failed = true
	panic(fatal{fmt.Errorf(f, a...)})
}

// TempDir gives each caller a new directory under the demo's.
func (r *runner) TempDir() string {
	r.dirs++
	dir := filepath.Join(r.dir, fmt.Sprintf("%03d", r.dirs))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.Fatal(err)
	}
	return dir
}

// step runs fn, turning a Fatal in it into its error.
func (r *runner) step(fn func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			f, ok := p.(fatal)
			if !ok {
				panic(p)
			}
			err = f.err
		}
	}()
	fn()
	return nil
}

// stop runs the cleanups, last first.
func (r *runner) stop() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		_ = r.step(r.cleanups[i])
	}
	r.cleanups = nil
}
