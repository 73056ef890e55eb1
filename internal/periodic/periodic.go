// Package periodic runs a function at an interval until told to stop: the
// engines report progress this way.
package periodic

import "time"

// Every calls fn every d until the returned stop is called; stop returns
// once fn is no longer running.
func Every(d time.Duration, fn func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return func() { close(quit); <-done }
}
