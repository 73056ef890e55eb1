package controller

import (
	"testing"
	"time"
)

func TestRetries(t *testing.T) {
	var r retries
	for i, want := range []struct {
		delay time.Duration
		again bool
	}{{3 * time.Second, true}, {6 * time.Second, true}, {12 * time.Second, true}, {24 * time.Second, false}} {
		delay, tries, again := r.next("a", 4, 3*time.Second)
		if delay != want.delay || tries != i+1 || again != want.again {
			t.Errorf("try %d: %s %d %v, want %s %d %v", i+1, delay, tries, again, want.delay, i+1, want.again)
		}
	}
	if delay, tries, again := r.next("b", 0, 0); delay != 2*time.Second || tries != 1 || !again {
		t.Errorf("defaults: %s %d %v, want 2s 1 true", delay, tries, again)
	}
	for range 10 {
		r.next("c", 100, time.Second)
	}
	if delay, _, _ := r.next("c", 100, time.Second); delay != time.Minute {
		t.Errorf("the delay is not capped at a minute: %s", delay)
	}
	r.forget("a", "c")
	if _, tries, _ := r.next("a", 4, time.Second); tries != 1 {
		t.Errorf("forget kept a's count: try %d", tries)
	}
	if _, tries, _ := r.next("b", 4, time.Second); tries != 2 {
		t.Errorf("forget of other keys dropped b's count: try %d", tries)
	}
}
