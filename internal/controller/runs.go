package controller

import (
	"context"
	"sync"
)

// Runs are the backups this server is working on right now — a first pass,
// or a step of following operations and finalizing — so that deleting one
// stops the work before its files go: otherwise the run would write them
// again after the delete, and sync would bring the backup back.
type Runs struct{ m sync.Map }

// start records that key's backup is being worked on; cancel (may be nil)
// stops the work.
func (r *Runs) start(key string, cancel context.CancelCauseFunc) {
	if cancel == nil {
		cancel = func(error) {}
	}
	r.m.Store(key, cancel)
}

func (r *Runs) done(key string) { r.m.Delete(key) }

func (r *Runs) running(key string) bool {
	_, ok := r.m.Load(key)
	return ok
}

// cancel stops key's backup with cause if it is being worked on, and says
// whether it was.
func (r *Runs) cancel(key string, cause error) bool {
	c, ok := r.m.Load(key)
	if ok {
		c.(context.CancelCauseFunc)(cause)
	}
	return ok
}

// operationsRun marks, after a backup's key, a step of following its
// operations or finalizing it.
const operationsRun = "\x00operations"
