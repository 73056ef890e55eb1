package controller

import (
	"sync"
	"time"
)

// retries counts the failed attempts at one step of each object (a
// finalisation, reading or writing a location's files) and says how long
// to wait before the next: backoff after the first failure, doubled after
// each, up to a minute, until attempts are spent. A location that answers
// 5xx or restarts is the usual cause, and it comes back.
type retries struct {
	mu    sync.Mutex
	tries map[string]int
}

// next records a failure of key's step; attempts and backoff of 0 mean 8
// and 2s.
func (r *retries) next(key string, attempts int, backoff time.Duration) (delay time.Duration, tries int, again bool) {
	if attempts <= 0 {
		attempts = 8
	}
	if backoff <= 0 {
		backoff = 2 * time.Second
	}
	r.mu.Lock()
	if r.tries == nil {
		r.tries = map[string]int{}
	}
	r.tries[key]++
	tries = r.tries[key]
	r.mu.Unlock()
	return min(backoff<<(tries-1), time.Minute), tries, tries < attempts
}

// forget drops the counts of steps that are over.
func (r *retries) forget(keys ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		delete(r.tries, k)
	}
}
