package output

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestPickupSaysOnceThatNoServerHasTheObject(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	p := &Pickup{Kind: "backup", Name: "b1", Namespace: "app", After: 20 * time.Millisecond, now: func() time.Time { return clock }}
	p.Check(&out, true)
	clock = clock.Add(19 * time.Millisecond)
	p.Check(&out, true)
	if out.Len() != 0 {
		t.Fatalf("said too soon: %s", out.String())
	}
	clock = clock.Add(time.Millisecond)
	p.Check(&out, true)
	p.Check(&out, true)
	if got := strings.Count(out.String(), "No server has picked up backup b1 in 20ms: is `salvor server` running for namespace app?"); got != 1 {
		t.Errorf("said %d times: %s", got, out.String())
	}
	if err := p.Stopped(true, context.Canceled); !strings.Contains(err.Error(), "it was still New, no server had picked it up in 20ms; it starts when one does") {
		t.Errorf("stopped while New, after saying no server had it: %v", err)
	}
	early := &Pickup{Kind: "backup", Name: "b2", now: func() time.Time { return clock }}
	early.Check(&out, true)
	if err := early.Stopped(true, context.Canceled); !strings.Contains(err.Error(), "stopped waiting for backup b2 while it was still New: it goes on when the server picks it up (`salvor backup describe b2` follows it)") ||
		strings.Contains(err.Error(), "no server") {
		t.Errorf("stopped while New, before a server could take it: %v", err)
	}
	if err := p.Stopped(false, context.Canceled); !strings.Contains(err.Error(), "it goes on in the server") {
		t.Errorf("stopped while running: %v", err)
	}
	var quiet bytes.Buffer
	q := &Pickup{Kind: "restore", Name: "r", After: time.Millisecond, now: func() time.Time { return clock }}
	q.Check(&quiet, false)
	clock = clock.Add(time.Hour)
	q.Check(&quiet, false)
	if quiet.Len() != 0 {
		t.Errorf("an object a server has is reported: %s", quiet.String())
	}
}
